package serve

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/queue"
)

// githubTelemetry is what the real GitHub client reports about itself; the
// simulation reports nothing.
type githubTelemetry interface {
	Calls() rest.CallCounts
	RateLimits() map[int64]rest.RateLimit
}

// metrics answers GET /metrics in Prometheus' text format: live instances by
// pool and status, dead letters, and — with the real GitHub client — API
// calls by operation and each installation's remaining rate limit, so an
// operator can alert before the budget runs out. Everything is read at
// scrape time from the live set; nothing is kept in memory between scrapes.
func metrics(eng *engine.Engine, q queue.DeadLetterer, gh any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
		defer cancel()
		var b strings.Builder
		live, err := eng.ListInstances(ctx, "")
		if err != nil {
			http.Error(w, "metrics: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		family(&b, "runfleet_instances", "gauge", "Live instances by pool and status.")
		for _, c := range engine.CountLive(live) {
			fmt.Fprintf(&b, "runfleet_instances{pool=%q,status=%q} %d\n", c.Pool, c.Status, c.Count)
		}
		if dead, err := q.DeadLetters(ctx); err == nil {
			family(&b, "runfleet_dead_letters", "gauge", "Work messages in the dead-letter store.")
			fmt.Fprintf(&b, "runfleet_dead_letters %d\n", len(dead))
		}
		if t, ok := gh.(githubTelemetry); ok {
			calls := t.Calls()
			family(&b, "runfleet_github_api_calls_total", "counter", "GitHub API calls by operation.")
			ops := make([]string, 0, len(calls.ByOperation))
			for op := range calls.ByOperation {
				ops = append(ops, op)
			}
			sort.Strings(ops)
			for _, op := range ops {
				fmt.Fprintf(&b, "runfleet_github_api_calls_total{operation=%q} %d\n", op, calls.ByOperation[op])
			}
			family(&b, "runfleet_github_rate_limit_remaining", "gauge", "Requests left in the current rate-limit window, by installation (0 = token).")
			limits := t.RateLimits()
			ids := make([]int64, 0, len(limits))
			for id := range limits {
				ids = append(ids, id)
			}
			sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
			for _, id := range ids {
				fmt.Fprintf(&b, "runfleet_github_rate_limit_remaining{installation=\"%d\"} %d\n", id, limits[id].Remaining)
			}
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write([]byte(b.String()))
	})
}

func family(b *strings.Builder, name, kind, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind)
}
