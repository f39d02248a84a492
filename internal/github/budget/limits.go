// Package budget paces the requests runfleet makes with one GitHub
// credential (an App installation, the App itself, or a token) so that
// GitHub never has to refuse them.
//
// GitHub's REST API has two kinds of limit (docs.github.com, "Rate limits
// for the REST API"): a primary budget of requests per hour, reported on
// every answer in x-ratelimit-remaining and x-ratelimit-reset, and
// secondary limits — at most 100 requests in flight and 900 points per
// minute, where a GET or HEAD costs 1 point and a POST, PATCH, PUT or DELETE
// 5. Past either, GitHub answers 403 or 429, and an integration that keeps
// calling through a secondary limit may be banned.
//
// A Budget holds a credential to both: calls take points from a small
// bucket that refills at an even pace (so no minute's budget is ever spent
// in a second), a bounded number are in flight at once, none goes while the
// primary budget reads 0, and none at all — not even GET /rate_limit — goes
// while a penalty GitHub imposed lasts.
package budget

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// GitHub's published secondary limits for REST, per credential.
const (
	GitHubPointsPerMinute = 900
	GitHubMaxConcurrent   = 100
)

// Point costs (GitHub: "most REST API GET, HEAD, and OPTIONS requests" 1,
// "most POST, PATCH, PUT, or DELETE requests" 5).
const (
	ReadCost  = 1
	WriteCost = 5
)

// Defaults. They sit below GitHub's numbers on purpose:
//
//   - DefaultPointsPerMinute is 90% of 900. GitHub's window and ours are
//     not aligned, some endpoints cost more than GitHub says ("a different
//     point cost that is not shared publicly"), and another process with
//     the same credential (a second runfleet during a deploy, an operator's
//     script) spends from the same 900: the 10% absorbs those without a
//     refusal, and costs 10% of peak throughput, which runfleet reaches
//     only in bursts of hundreds of jobs.
//   - DefaultMaxInFlight is 10 of GitHub's 100. At GitHub's usual 0.2–0.5 s
//     per call, 10 in flight carry 20–50 calls a second, more than the
//     points allow (13.5 a second at most), so a higher cap buys nothing;
//     and GitHub counts the 100 across every process using the credential
//     (several Lambda workers, GraphQL from other tools), which 10 per
//     process leaves room for.
//   - DefaultMaxWait bounds how long a call waits in-process for points.
//     A longer wait is handed back to the caller as a paced
//     *github.RateLimitError, so a worker is not held for minutes and the
//     engine can reschedule the work instead.
const (
	DefaultPointsPerMinute = 810
	DefaultMaxInFlight     = 10
	DefaultMaxWait         = 10 * time.Second
)

// Limits configure a Budget. The zero value of each field means its default.
type Limits struct {
	// PointsPerMinute bounds the points spent in any 60 s window, not just
	// on average: the bucket's refill is set so that a full burst plus a
	// minute of refill stays within it.
	PointsPerMinute int
	// Burst is how many points may go at once, the bucket's size: a few
	// seconds' worth (default PointsPerMinute/20, three seconds), so a
	// burst of jobs is spread instead of spending a minute's budget in a
	// second. At least WriteCost.
	Burst int
	// MaxInFlight caps this process's requests in flight.
	MaxInFlight int
	// MaxWait is the longest a call waits for points before it is refused
	// locally with a paced *github.RateLimitError (default
	// DefaultMaxWait).
	MaxWait time.Duration
}

// WithDefaults fills the zero fields.
func (l Limits) WithDefaults() Limits {
	if l.PointsPerMinute == 0 {
		l.PointsPerMinute = DefaultPointsPerMinute
	}
	if l.Burst == 0 {
		l.Burst = max(l.PointsPerMinute/20, WriteCost)
	}
	if l.MaxInFlight == 0 {
		l.MaxInFlight = DefaultMaxInFlight
	}
	if l.MaxWait == 0 {
		l.MaxWait = DefaultMaxWait
	}
	return l
}

// Validate reports limits that cannot work or that GitHub would refuse.
func (l Limits) Validate() error {
	var errs []error
	if l.PointsPerMinute < 0 || l.PointsPerMinute > GitHubPointsPerMinute {
		errs = append(errs, fmt.Errorf("points per minute %d: want 1–%d (GitHub's secondary limit)", l.PointsPerMinute, GitHubPointsPerMinute))
	}
	if l.Burst < 0 || (l.Burst > 0 && l.Burst < WriteCost) {
		errs = append(errs, fmt.Errorf("burst %d: want at least %d, the cost of one write", l.Burst, WriteCost))
	}
	if l.PointsPerMinute > 0 && l.Burst >= l.PointsPerMinute {
		errs = append(errs, fmt.Errorf("burst %d: want less than the points per minute (%d)", l.Burst, l.PointsPerMinute))
	}
	if l.MaxInFlight < 0 || l.MaxInFlight > GitHubMaxConcurrent {
		errs = append(errs, fmt.Errorf("max in flight %d: want 1–%d (GitHub's concurrency limit)", l.MaxInFlight, GitHubMaxConcurrent))
	}
	if l.MaxWait < 0 {
		errs = append(errs, fmt.Errorf("max wait %s: want ≥ 0", l.MaxWait))
	}
	return errors.Join(errs...)
}

// LateGrace is how late a call may come after its turn and still go in
// it: the time the bucket takes to refill a burst. Calls sent up to that
// late add to any 60 s window at most what the bucket refills in that
// time, a burst, so the window sees at most PointsPerMinute + Burst (850
// of GitHub's 900 at the defaults); a call later still would add every
// point its lateness let the bucket refill, and is queued again instead.
func (l Limits) LateGrace() time.Duration {
	return time.Duration(float64(l.Burst) / l.refill() * float64(time.Second))
}

// refill is the bucket's refill in points per second: what is left of the
// minute's points once a full burst is taken, spread over the minute. Any
// 60 s window then sees at most Burst + refill×60 = PointsPerMinute.
func (l Limits) refill() float64 {
	return float64(l.PointsPerMinute-l.Burst) / 60
}

// Cost is the points GitHub charges a request with this method.
func Cost(method string) int {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, "":
		return ReadCost
	default:
		return WriteCost
	}
}
