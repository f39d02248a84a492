package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/metrics/promexport"
	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/statuspage"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/webhook"
)

// healthTimeout bounds the health check's reads.
const healthTimeout = 5 * time.Second

// routes is embedded mode's whole HTTP surface.
// page is the status page's recorder; nil starts an empty one.
func routes(cfg *config.Config, eng *engine.Engine, st store.Store, q queue.DeadLetterer, rec *promexport.Recorder, log *slog.Logger, page *statuspage.Recorder) (http.Handler, error) {
	intake, err := webhook.New(webhook.Options{
		Secret:       cfg.Webhook.Secret,
		MaxBodyBytes: cfg.Webhook.MaxBodyBytes,
		Handler:      eng,
		Logger:       log,
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	// Every method reaches the intake, which answers the wrong ones with its
	// own JSON 405 (the reply GitHub's delivery log shows).
	mux.Handle("/webhook", metrics.ObserveWebhooks(intake, rec))
	mux.Handle("GET /healthz", healthz(st, q))
	if cfg.Server.MetricsAddress == "" {
		mux.Handle("GET /metrics", metricsHandler(rec, cfg.Server.MetricsToken, log))
	}
	mux.Handle(httpapi.Prefix, httpapi.New(httpapi.Options{Engine: eng, Token: cfg.Server.APIToken, Logger: log, Backup: backupOf(st)}))
	status := statuspage.New(statuspage.Options{Source: eng, Recorder: page, Token: cfg.Server.APIToken, Logger: log})
	mux.Handle("/{$}", status)
	mux.Handle("/why/{job}", status)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]any{
			"error":  fmt.Sprintf("no such route: %s %s (runfleet serves GET / (the status page), GET /why/{job} (a job's timeline), POST /webhook, GET /healthz, GET /metrics and %s)", r.Method, r.URL.Path, httpapi.Prefix),
			"status": http.StatusNotFound,
		})
	})
	return mux, nil
}

// backupOf is the store's online backup, when its kind has one (bolt:
// `runfleet backup`); nil otherwise.
func backupOf(st store.Store) httpapi.BackupFunc {
	if b, ok := st.(interface {
		WriteBackup(w io.Writer) (int64, error)
	}); ok {
		return b.WriteBackup
	}
	return nil
}

// healthz answers 200 {"status":"ok"} when both the store and the queue can
// be read, else 503 saying which cannot. It also counts dead-lettered
// messages, which an operator should look at but which do not make runfleet
// unhealthy.
func healthz(st store.Store, q queue.DeadLetterer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
		defer cancel()
		// A read of a name that never exists touches the file without
		// depending on what is in it.
		if _, err := st.GetInstance(ctx, "runfleet-healthz-probe"); err != nil && !errors.Is(err, store.ErrNotFound) {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "error": "store: " + err.Error()})
			return
		}
		dead, err := q.DeadLetters(ctx)
		if err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "error": "queue: " + err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "dead_letters": len(dead)})
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
