package rest

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gogithub "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github"
)

// GitHub's advice when a limit gives no time to wait: at least a minute,
// doubling while it keeps happening.
const (
	minRateLimitWait    = time.Minute
	maxSecondaryBackoff = 15 * time.Minute
	refusedUntilReset   = "not calling GitHub until the rate limit resets"
)

// rateLimitOf recognises every shape a rate limit takes, or returns nil:
//   - go-github's *RateLimitError: a 403 with x-ratelimit-remaining: 0, or
//     go-github refusing locally until the reset it last saw;
//   - go-github's *AbuseRateLimitError: a 403 secondary limit (or refused
//     locally until its retry-after);
//   - a 429 or 403 go-github left as *ErrorResponse (v57 does not classify
//     429): remaining 0 → primary, until x-ratelimit-reset; retry-after →
//     secondary, that long; otherwise secondary with backoff;
//   - the same statuses from ghinstallation while minting a token.
func rateLimitOf(inst *installation, now time.Time, err error) *github.RateLimitError {
	var primary *gogithub.RateLimitError
	if errors.As(err, &primary) {
		retryAt := primary.Rate.Reset.Time
		if retryAt.IsZero() {
			retryAt = now.Add(minRateLimitWait)
		}
		return &github.RateLimitError{RetryAt: retryAt, Message: primary.Message}
	}
	var abuse *gogithub.AbuseRateLimitError
	if errors.As(err, &abuse) {
		rl := &github.RateLimitError{Secondary: true, Message: abuse.Message}
		if abuse.RetryAfter != nil && *abuse.RetryAfter > 0 {
			rl.RetryAt = now.Add(*abuse.RetryAfter)
		} else {
			rl.RetryAt = now.Add(inst.secondaryBackoff())
		}
		return rl
	}
	var er *gogithub.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return fromResponse(inst, now, er.Response, er.Message)
	}
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		return fromResponse(inst, now, he.Response, he.Message)
	}
	return nil
}

// fromResponse reads a 403/429 answer's headers.
func fromResponse(inst *installation, now time.Time, resp *http.Response, message string) *github.RateLimitError {
	status := resp.StatusCode
	if status != http.StatusForbidden && status != http.StatusTooManyRequests {
		return nil
	}
	h := resp.Header
	retryAfter, hasRetryAfter := parseRetryAfter(h.Get("Retry-After"), now)
	if h.Get("X-RateLimit-Remaining") == "0" {
		rl := &github.RateLimitError{Message: message}
		if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil && reset > 0 {
			rl.RetryAt = time.Unix(reset, 0)
		} else if hasRetryAfter {
			rl.RetryAt = now.Add(retryAfter)
		} else {
			rl.RetryAt = now.Add(minRateLimitWait)
		}
		return rl
	}
	secondary := hasRetryAfter || status == http.StatusTooManyRequests ||
		strings.Contains(strings.ToLower(message), "secondary rate limit")
	if !secondary {
		return nil // a 403 that is about permissions
	}
	rl := &github.RateLimitError{Secondary: true, Message: message}
	if hasRetryAfter {
		rl.RetryAt = now.Add(retryAfter)
	} else {
		rl.RetryAt = now.Add(inst.secondaryBackoff())
	}
	return rl
}

// parseRetryAfter reads delay-seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		return max(time.Duration(secs)*time.Second, time.Second), true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), time.Second), true
	}
	return 0, false
}

// secondaryBackoff is the wait after a secondary limit that named none:
// a minute, doubling with each one in a row, capped.
func (inst *installation) secondaryBackoff() time.Duration {
	if inst == nil {
		return minRateLimitWait
	}
	inst.mu.Lock()
	defer inst.mu.Unlock()
	inst.secondaryStrikes++
	d := minRateLimitWait
	for i := 1; i < inst.secondaryStrikes && d < maxSecondaryBackoff; i++ {
		d *= 2
	}
	return min(d, maxSecondaryBackoff)
}

// block makes the installation refuse calls until the limit lifts.
func (inst *installation) block(rl *github.RateLimitError) {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if rl.RetryAt.After(inst.blockedUntil) {
		inst.blockedUntil = rl.RetryAt
		inst.blockedSecondary = rl.Secondary
	}
}

// gate refuses a call while a limit GitHub reported lasts: calling anyway
// would only be refused again (and GitHub may ban an integration that keeps
// calling through a secondary limit).
func (inst *installation) gate(now time.Time) error {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	if now.Before(inst.blockedUntil) {
		return &github.RateLimitError{RetryAt: inst.blockedUntil, Secondary: inst.blockedSecondary, Message: refusedUntilReset}
	}
	return nil
}

// succeeded ends a run of secondary limits.
func (inst *installation) succeeded() {
	inst.mu.Lock()
	defer inst.mu.Unlock()
	inst.secondaryStrikes = 0
}
