package serve

import (
	"context"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/cost"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/metrics/promexport"
	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/wiring"
)

// newRecorder is embedded mode's metrics: the vocabulary (internal/metrics)
// on a Prometheus registry. What it reads at scrape time is what exists
// already: the store (live instances, open jobs), the queue's dead letters
// and the real GitHub client's own counters. The stuck gauges count by the
// engine's rule, which Run hands over once the engine is built
// (Recorder.CountStuck): the engine reports to this recorder, so it comes
// after it.
func newRecorder(cfg *config.Config, st store.Store, dead queue.DeadLetterer, gh github.GitHub, build metrics.Build) *promexport.Recorder {
	pools := make([]string, 0, len(cfg.Pools))
	limits := make(map[string]int, len(cfg.Pools))
	for _, p := range cfg.Pools {
		pools = append(pools, p.Name)
		limits[p.Name] = p.MaxRunners
	}
	state := promexport.State{Store: st, DeadLetters: dead, MaxRunners: limits, Build: build}
	if t, ok := gh.(promexport.GitHubTelemetry); ok {
		state.GitHub = t
	}
	return promexport.New(pools, state)
}

// watchBudgets is the pools' monthly budget watch (cost.Budget), seeded
// with this month's costs of the deleted instances the store keeps; nil
// when no pool has a budget.
func watchBudgets(ctx context.Context, cfg *config.Config, st store.Store, rec *promexport.Recorder, log *slog.Logger) engine.Observer {
	limits := wiring.Budgets(cfg)
	if len(limits) == 0 {
		return nil
	}
	budget := cost.NewBudget(limits, rec.BudgetExceeded, log)
	lister, ok := st.(store.DeletedLister)
	if !ok {
		log.Info("monthly budgets count from this start: the store cannot list deleted instances")
		return budget
	}
	deleted, err := lister.ListDeletedInstances(ctx, "")
	if err != nil {
		log.Warn("monthly budgets count from this start: reading the deleted instances failed", "error", err)
		return budget
	}
	budget.Seed(deleted, time.Now())
	return budget
}

// metricsHandler answers GET /metrics, behind server.metrics_token's
// bearer token when one is set.
func metricsHandler(rec *promexport.Recorder, token string, log *slog.Logger) http.Handler {
	h := rec.Handler(slog.NewLogLogger(log.Handler(), slog.LevelWarn))
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			log.Warn("metrics scrape refused: missing or wrong bearer token", "remote", r.RemoteAddr,
				"authorization_present", strings.TrimSpace(string(got)) != "", "status", http.StatusUnauthorized)
			w.Header().Set("WWW-Authenticate", `Bearer realm="runfleet metrics"`)
			http.Error(w, "metrics: a bearer token is required (server.metrics_token)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// metricsServer is the listener of server.metrics_address, when set: only
// GET /metrics is served there. ln, when given, is used instead of
// listening (tests).
func metricsServer(cfg *config.Config, rec *promexport.Recorder, ln net.Listener, log *slog.Logger) (*http.Server, net.Listener, error) {
	if cfg.Server.MetricsAddress == "" {
		if ln != nil {
			_ = ln.Close()
		}
		return nil, nil, nil
	}
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", cfg.Server.MetricsAddress); err != nil {
			return nil, nil, fmt.Errorf("serve: listen on %s (server.metrics_address): %w", cfg.Server.MetricsAddress, err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metricsHandler(rec, cfg.Server.MetricsToken, log))
	return newHTTPServer(mux, log), ln, nil
}

// metricsURL is where /metrics is served, for the start line.
func metricsURL(cfg *config.Config, base string) string {
	if cfg.Server.MetricsAddress != "" {
		return "http://" + cfg.Server.MetricsAddress + "/metrics"
	}
	return base + "/metrics"
}
