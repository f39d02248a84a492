package work

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/metrics"
)

// githubTelemetry is what the real GitHub client reports about itself; the
// simulation reports nothing, and then no GitHub metric is published.
type githubTelemetry interface {
	Calls() rest.CallCounts
	RateLimits() map[int64]rest.RateLimit
}

// githubRefusals is what a client with GitHub Apps reports of GitHub
// refusing them (runfleet_github_app_refused).
type githubRefusals interface {
	AppRefusals() map[int64]int
}

// invocationMetrics adds to the App's EMF recorder (which hears the engine
// and the providers as they work) what the GitHub client counted during
// one invocation. Lambda runs one invocation at a time per execution
// environment, so the difference of the client's counters across the
// invocation is the invocation's own.
type invocationMetrics struct {
	emf    *metrics.EMF
	gh     githubTelemetry
	before rest.CallCounts
}

// startMetrics snapshots the GitHub client's counters at the start of an
// invocation.
func (a *App) startMetrics() *invocationMetrics {
	m := &invocationMetrics{emf: a.Metrics}
	if gh, ok := a.GitHub.(githubTelemetry); ok {
		m.gh, m.before = gh, gh.Calls()
	}
	return m
}

// flush adds the GitHub metrics (runfleet_github_calls_total by operation
// and result, runfleet_github_rate_limit_remaining by installation,
// runfleet_github_app_refused by App) and
// writes everything as EMF lines. A failed write is logged, never
// returned: metrics must not fail the work.
func (m *invocationMetrics) flush(ctx context.Context, log *slog.Logger) {
	if m.gh != nil {
		calls := m.gh.Calls().Sub(m.before)
		for _, op := range rest.Operations {
			for _, res := range rest.CallResults {
				m.emf.GitHubCalls(op, res, calls.ByResult[rest.CallKey{Operation: op, Result: res}])
			}
		}
		now := time.Now()
		for id, rate := range m.gh.RateLimits() {
			m.emf.GitHubRateLimitRemaining(strconv.FormatInt(id, 10), rate.RemainingAt(now))
		}
		if r, ok := m.gh.(githubRefusals); ok {
			for app, n := range r.AppRefusals() {
				m.emf.GitHubAppRefused(strconv.FormatInt(app, 10), n)
			}
		}
	}
	if err := m.emf.Flush(); err != nil {
		log.WarnContext(ctx, "metrics could not be written", "error", err)
	}
}
