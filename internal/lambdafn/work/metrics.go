package work

import (
	"context"
	"log/slog"
	"sort"
	"strconv"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/telemetry"
)

// The CloudWatch metrics the worker and reconciler publish (namespace
// runfleet, every one also with the ControllerId dimension). They are the
// Lambda counterpart of embedded mode's GET /metrics.
const (
	// MetricGitHubAPICalls counts requests sent to GitHub during one
	// invocation, by Operation.
	MetricGitHubAPICalls = "GitHubAPICalls"
	// MetricGitHubRateLimitRemaining is the requests left in an
	// installation's rate-limit window (Installation "0": a token), as
	// GitHub last reported it.
	MetricGitHubRateLimitRemaining = "GitHubRateLimitRemaining"
	// MetricLiveInstances counts live instances by Pool and Status, once per
	// reconcile pass.
	MetricLiveInstances = "LiveInstances"
)

// githubTelemetry is what the real GitHub client reports about itself; the
// simulation reports nothing, and then no GitHub metric is published.
type githubTelemetry interface {
	Calls() rest.CallCounts
	RateLimits() map[int64]rest.RateLimit
}

// invocationMetrics gathers one invocation's metrics. Lambda runs one
// invocation at a time per execution environment, so the difference of
// the client's counters across the invocation is the invocation's own.
type invocationMetrics struct {
	emf    *telemetry.EMF
	gh     githubTelemetry
	before rest.CallCounts
}

// startMetrics snapshots the GitHub client's counters at the start of an
// invocation.
func (a *App) startMetrics() *invocationMetrics {
	m := &invocationMetrics{
		emf: telemetry.NewEMF(a.metricsOut, telemetry.Namespace, telemetry.Dimension{Name: "ControllerId", Value: a.Config.ControllerID}),
	}
	if gh, ok := a.GitHub.(githubTelemetry); ok {
		m.gh, m.before = gh, gh.Calls()
	}
	return m
}

// liveInstances adds the live set's size by pool and status.
func (m *invocationMetrics) liveInstances(counts []engine.LiveCount) {
	for _, c := range counts {
		m.emf.Put(MetricLiveInstances, float64(c.Count), telemetry.UnitCount,
			telemetry.Dimension{Name: "Pool", Value: c.Pool}, telemetry.Dimension{Name: "Status", Value: string(c.Status)})
	}
}

// flush adds the GitHub metrics and writes everything as EMF lines. A
// failed write is logged, never returned: metrics must not fail the work.
func (m *invocationMetrics) flush(ctx context.Context, log *slog.Logger) {
	if m.gh != nil {
		calls := m.gh.Calls().Sub(m.before)
		ops := make([]string, 0, len(calls.ByOperation))
		for op := range calls.ByOperation {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		for _, op := range ops {
			m.emf.Put(MetricGitHubAPICalls, float64(calls.ByOperation[op]), telemetry.UnitCount,
				telemetry.Dimension{Name: "Operation", Value: op})
		}
		limits := m.gh.RateLimits()
		ids := make([]int64, 0, len(limits))
		for id := range limits {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		now := time.Now()
		for _, id := range ids {
			m.emf.Put(MetricGitHubRateLimitRemaining, float64(remaining(limits[id], now)), telemetry.UnitCount,
				telemetry.Dimension{Name: "Installation", Value: strconv.FormatInt(id, 10)})
		}
	}
	if err := m.emf.Flush(); err != nil {
		log.WarnContext(ctx, "metrics could not be written", "error", err)
	}
}

// remaining is what is left of rate's budget at now: the whole limit once
// the window GitHub last reported has reset, so a low count seen an hour
// ago does not keep an alarm firing.
func remaining(rate rest.RateLimit, now time.Time) int {
	if !rate.Reset.IsZero() && now.After(rate.Reset) && rate.Limit > 0 {
		return rate.Limit
	}
	return rate.Remaining
}
