package rest

import (
	"maps"
	"sync"
	"time"
)

// CallCounts are the requests sent to GitHub since the client was made.
// Every one spends rate-limit budget: API calls the installation's,
// installation-token mints and installation look-ups the App's.
type CallCounts struct {
	Total       int64
	ByOperation map[string]int64 // keyed by the Op* constants
	// ByResult counts the same requests by operation and by what GitHub
	// answered (CallOK, CallError, CallRateLimited).
	ByResult map[CallKey]int64
}

// CallKey is an operation and the result of a request made for it.
type CallKey struct {
	Operation, Result string
}

// Call results: how GitHub answered a request.
const (
	// CallOK: a 1xx–3xx answer.
	CallOK = "ok"
	// CallError: no answer (a network error) or a 4xx/5xx that is not a
	// rate limit — including answers the client expects, such as 404 for
	// a runner already gone.
	CallError = "error"
	// CallRateLimited: 429, or 403 with the budget at 0 or a Retry-After
	// (a secondary rate limit).
	CallRateLimited = "rate_limited"
)

// CallResults lists every call result.
var CallResults = []string{CallOK, CallError, CallRateLimited}

// API is the number of calls that spent an installation's budget: Total
// without the App's own calls (token mints, installation look-ups, the
// webhook delivery log).
func (c CallCounts) API() int64 {
	app := c.ByOperation[OpCreateInstallationToken] + c.ByOperation[OpFindInstallation] +
		c.ByOperation[OpListDeliveries] + c.ByOperation[OpGetDelivery]
	return c.Total - app
}

// Sub returns the calls made since an earlier snapshot.
func (c CallCounts) Sub(earlier CallCounts) CallCounts {
	out := CallCounts{Total: c.Total - earlier.Total, ByOperation: make(map[string]int64), ByResult: make(map[CallKey]int64)}
	for op, n := range c.ByOperation {
		if d := n - earlier.ByOperation[op]; d != 0 {
			out.ByOperation[op] = d
		}
	}
	for k, n := range c.ByResult {
		if d := n - earlier.ByResult[k]; d != 0 {
			out.ByResult[k] = d
		}
	}
	return out
}

// RateLimit is an installation's primary rate-limit budget as GitHub last
// reported it.
type RateLimit struct {
	Limit     int
	Remaining int
	Reset     time.Time
	// ObservedAt is when the answer carrying it arrived.
	ObservedAt time.Time
}

// RemainingAt is what is left of the budget at now: the whole limit once
// the window GitHub last reported has reset, so a low count seen an hour
// ago does not keep an alarm firing.
func (r RateLimit) RemainingAt(now time.Time) int {
	if !r.Reset.IsZero() && now.After(r.Reset) && r.Limit > 0 {
		return r.Limit
	}
	return r.Remaining
}

type telemetry struct {
	now      func() time.Time
	mu       sync.Mutex
	total    int64
	byOp     map[string]int64
	byResult map[CallKey]int64
	rates    map[int64]RateLimit
}

func (t *telemetry) init(now func() time.Time) {
	t.now = now
	t.byOp = make(map[string]int64)
	t.byResult = make(map[CallKey]int64)
	t.rates = make(map[int64]RateLimit)
}

func (t *telemetry) count(op, result string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total++
	t.byOp[op]++
	t.byResult[CallKey{op, result}]++
}

func (t *telemetry) recordRate(installationID int64, rate RateLimit) {
	rate.ObservedAt = t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rates[installationID] = rate
}

// Calls returns a snapshot of the request counters.
func (c *Client) Calls() CallCounts {
	c.telemetry.mu.Lock()
	defer c.telemetry.mu.Unlock()
	return CallCounts{Total: c.telemetry.total, ByOperation: maps.Clone(c.telemetry.byOp), ByResult: maps.Clone(c.telemetry.byResult)}
}

// RateLimits returns each installation's last reported budget, keyed by
// installation id (0 with a personal access token).
func (c *Client) RateLimits() map[int64]RateLimit {
	c.telemetry.mu.Lock()
	defer c.telemetry.mu.Unlock()
	return maps.Clone(c.telemetry.rates)
}
