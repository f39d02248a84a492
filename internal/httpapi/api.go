// Package httpapi is runfleet's operator API, served by `runfleet serve`
// under /api/v1/ and used by the `runfleet instances` commands (Client).
//
// Every route needs the bearer token from the config (server.api_token_env or
// api_token_file). With no token configured the whole API answers 404, so a
// config without one can never expose an unauthenticated force delete.
// Every answer is JSON; errors are {"error": "...", "status": N}.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// Prefix is the path under which the API is served.
const Prefix = "/api/v1/"

// Engine is what the API needs from the engine; *engine.Engine has it.
type Engine interface {
	ListInstances(ctx context.Context, pool string) ([]*runner.Instance, error)
	ListDeletedInstances(ctx context.Context, pool string) ([]*runner.Instance, error)
	ReadOpenDemand(ctx context.Context) (engine.OpenDemand, error)
	Why(ctx context.Context, jobID int64) (*engine.Timeline, error)
	GetInstance(ctx context.Context, name string) (*runner.Instance, error)
	OperatorDelete(ctx context.Context, name string, mode engine.DeleteMode) (*runner.Instance, error)
	Reconcile(ctx context.Context) (engine.ReconcileReport, error)
}

var _ Engine = (*engine.Engine)(nil)

// Options configure the API handler.
type Options struct {
	Engine Engine
	// Token is the bearer token operators must send. Empty disables the API.
	Token string
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Backup, when set, serves GET /api/v1/backup; nil answers 501.
	Backup BackupFunc
}

// api serves the routes once a request is authorised.
type api struct {
	engine   Engine
	log      *slog.Logger
	backupTo BackupFunc
}

// New returns the handler for everything under Prefix. Mount it with
// mux.Handle(httpapi.Prefix, handler).
func New(opts Options) http.Handler {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.Token == "" {
		return disabled{}
	}
	a := &api{engine: opts.Engine, log: log, backupTo: opts.Backup}
	return &guard{token: digest(opts.Token), log: log, next: a.routes()}
}

func (a *api) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+Prefix+"instances", a.listInstances)
	mux.HandleFunc("GET "+Prefix+"instances/{name}", a.getInstance)
	mux.HandleFunc("DELETE "+Prefix+"instances/{name}", a.deleteInstance)
	mux.HandleFunc("POST "+Prefix+"reconcile", a.reconcile)
	mux.HandleFunc("GET "+Prefix+"jobs", a.listJobs)
	mux.HandleFunc("GET "+Prefix+"jobs/{job}/why", a.why)
	mux.HandleFunc("GET "+Prefix+"backup", a.backup)
	// Method-less patterns catch the wrong methods on known paths, so those
	// get a JSON 405 rather than the mux's plain-text one.
	mux.Handle(Prefix+"instances", methodNotAllowed("GET"))
	mux.Handle(Prefix+"instances/{name}", methodNotAllowed("GET, DELETE"))
	mux.Handle(Prefix+"reconcile", methodNotAllowed("POST"))
	mux.Handle(Prefix+"jobs", methodNotAllowed("GET"))
	mux.Handle(Prefix+"jobs/{job}/why", methodNotAllowed("GET"))
	mux.Handle(Prefix+"backup", methodNotAllowed("GET"))
	mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such operator API route: "+r.Method+" "+r.URL.Path)
	})
	return a.logged(mux)
}

// logged writes one line per operator request: these calls change the
// fleet by hand, so who did what, and with what answer, is worth keeping.
func (a *api) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		a.log.InfoContext(r.Context(), "operator API request",
			"method", r.Method, "path", r.URL.Path, "query", r.URL.RawQuery,
			"status", rec.status, "remote", r.RemoteAddr, "duration_ms", time.Since(start).Milliseconds())
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func methodNotAllowed(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed on "+r.URL.Path+"; use "+allow)
	})
}
