// Package serve assembles embedded mode, `runfleet serve`: one process with
// one bbolt file under store.dir holding the store and the durable work
// queue, an HTTP server (webhook intake, operator API, status page, runner
// bootstrap endpoints, /metrics, health check), queue workers and the
// reconciler ticker, all over the same engine the Lambda functions use.
package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/internal/queue/local"
	"github.com/runfleet/runfleet/internal/statuspage"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/wiring"
)

// File names under store.dir. The work queue lives in StateFile, so that an
// instance and its create message commit together (store.Outbox); QueueFile
// is where earlier versions kept it, and is no longer read.
const (
	StateFile = "state.db"
	QueueFile = "queue.db"
)

// DefaultShutdownTimeout bounds how long in-flight webhooks and API calls
// may take to finish once shutdown starts.
const DefaultShutdownTimeout = 20 * time.Second

// Options configure Run.
type Options struct {
	// Config is a loaded, validated configuration. Required.
	Config *config.Config
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Listener, when set, is served instead of listening on server.listen
	// (tests pass one bound to a free port). Run closes it.
	Listener net.Listener
	// MetricsListener is Listener's counterpart for server.metrics_address,
	// used only when that is set.
	MetricsListener net.Listener
	// DisableWorkers accepts and queues webhooks but starts no queue
	// consumers, so work stays queued for the next start: it lets a test
	// prove that nothing accepted is lost across a restart.
	DisableWorkers bool
	// ShutdownTimeout defaults to DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Version is logged at start.
	Version string
}

// Run serves until ctx is done, then shuts down in order: stop accepting
// requests and finish those in flight, stop the workers and the reconciler,
// close the queue, close the store. Problems with the configuration
// (provider or GitHub kinds this build lacks, bad provider settings) come
// back at once as joined *config.FieldError values, before anything is
// opened.
func Run(ctx context.Context, opts Options) (err error) {
	if opts.Config == nil {
		return errors.New("serve: no config")
	}
	cfg := opts.Config
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	// Until the HTTP server owns the given listener, a failed start closes it.
	serving := false
	defer func() {
		if !serving && opts.Listener != nil {
			_ = opts.Listener.Close()
		}
		if !serving && opts.MetricsListener != nil {
			_ = opts.MetricsListener.Close()
		}
	}()

	// Providers are checked before anything is opened, so a bad config is
	// reported as such; they are built for real once the store has given
	// the installation id their pool ids derive from.
	_, perr := wiring.Providers(cfg, "config-check")
	// One process: each credential's budget lives in it. (Several serve
	// replicas would need a store they share, and then the budget in it,
	// as on Lambda.)
	gh, gerr := wiring.GitHub(cfg, log, nil)
	if err := errors.Join(perr, gerr); err != nil {
		return err
	}

	st, q, err := openState(cfg)
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, closeState(st))
	}()
	warnLegacyQueue(log, cfg.Store.Dir)

	// Runner bootstrap (bootstrap.go): instance tokens and the metadata
	// routes, on when server.public_url is set.
	boot, err := newBootstrap(cfg, log)
	if err != nil {
		return err
	}
	installationID, err := st.InstallationID(ctx)
	if err != nil {
		return fmt.Errorf("serve: read the installation id from the store: %w", err)
	}
	// Metrics (metrics.go): the recorder hears the engine and the providers.
	var eng *engine.Engine
	rec := newRecorder(cfg, &eng, q, gh)
	provs, err := wiring.ObservedProviders(cfg, installationID, rec)
	if err != nil {
		return err
	}
	engOpts := wiring.EngineOptions(cfg)
	engOpts.Store, engOpts.Queue, engOpts.GitHub, engOpts.Providers, engOpts.Logger = st, q, gh, provs, log
	engOpts.InstallationID = installationID
	// The status page's recorder hears the engine beside the metrics.
	page := statuspage.NewRecorder(nil)
	engOpts.Observer = engine.Observers(rec, page)
	eng, err = engine.New(boot.engineOptions(engOpts))
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}

	handler, err := routes(cfg, eng, st, q, rec, log, page)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if handler, err = boot.mount(cfg, eng, handler, log); err != nil {
		return err
	}

	ln := opts.Listener
	if ln == nil {
		ln, err = net.Listen("tcp", cfg.Server.Listen)
		if err != nil {
			return fmt.Errorf("serve: listen on %s (server.listen): %w", cfg.Server.Listen, err)
		}
	}
	srv := newHTTPServer(handler, log)
	metricsSrv, metricsLn, err := metricsServer(cfg, rec, opts.MetricsListener, log)
	if err != nil {
		return err
	}

	if n, err := q.DeadLetters(ctx); err == nil && len(n) > 0 {
		log.Warn("the queue holds dead-lettered messages: work that failed max_receives times and was set aside",
			"dead_letters", len(n), "max_receives", cfg.Engine.MaxReceives)
	}

	// Logged before anything runs, so no request's or worker's line precedes
	// it; the listener is bound already, so the URLs are live.
	logStart(log, cfg, ln.Addr(), opts)

	// Workers and the reconciler get their own context, cancelled only once
	// the HTTP server has finished its requests: a webhook accepted during
	// shutdown is queued before the consumers stop.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	var background sync.WaitGroup
	// This process holds the store's exclusive lock, so whatever a crashed
	// predecessor left creating or deleting has no worker: recover it now,
	// not after its timeout — beside the HTTP server, so intake is never
	// kept waiting behind slow provider calls. A failure is retried by the
	// reconciler.
	background.Go(func() {
		if err := eng.RecoverAtStart(workCtx); err != nil {
			log.Warn("recovering work left in flight failed; the reconciler retries it", "error", err)
		}
	})
	if !opts.DisableWorkers {
		background.Go(func() {
			eng.Work(workCtx, q, engine.WorkerOptions{
				Concurrency: cfg.Engine.Workers,
				Visibility:  cfg.Engine.VisibilityTimeout,
			})
		})
	}
	reconcile := &reconciler{engine: eng, purger: st, interval: cfg.Engine.ReconcileInterval, log: log, metrics: rec}
	background.Go(func() { reconcile.run(workCtx) })

	serveErr := make(chan error, 2)
	serving = true
	go func() { serveErr <- srv.Serve(ln) }()
	if metricsSrv != nil {
		go func() { serveErr <- metricsSrv.Serve(metricsLn) }()
	}

	select {
	case <-ctx.Done():
		log.Info("shutting down: finishing requests in flight, then stopping workers", "timeout", opts.ShutdownTimeout.String())
	case err = <-serveErr:
		log.Error("HTTP server failed; shutting down", "error", err)
		err = fmt.Errorf("serve: HTTP server: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownTimeout)
	defer cancel()
	if serr := srv.Shutdown(shutdownCtx); serr != nil {
		log.Warn("requests still in flight at the shutdown timeout were cut off", "error", serr)
		_ = srv.Close()
	}
	if metricsSrv != nil {
		if serr := metricsSrv.Shutdown(shutdownCtx); serr != nil {
			_ = metricsSrv.Close()
		}
	}
	stopWork()
	background.Wait()
	log.Info("stopped; closing queue and store")
	return err
}

// openState opens the store, with the queue inside it, under store.dir.
func openState(cfg *config.Config) (*bolt.QueuedStore, *local.Queue, error) {
	if err := os.MkdirAll(cfg.Store.Dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("serve: create store.dir %s: %w", cfg.Store.Dir, err)
	}
	st, err := bolt.OpenWithQueue(filepath.Join(cfg.Store.Dir, StateFile), local.Options{
		MaxReceives:       cfg.Engine.MaxReceives,
		DefaultVisibility: cfg.Engine.VisibilityTimeout,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("serve: open store (is another runfleet serving from %s?): %w", cfg.Store.Dir, err)
	}
	return st, st.Queue(), nil
}

// closeState closes the queue, then the file it shares with the store.
func closeState(st *bolt.QueuedStore) error {
	return st.Close()
}

// warnLegacyQueue tells the operator that a queue file from an earlier
// version is ignored: messages left in it are not delivered (the reconciler
// re-sends the creates and deletes of live instances), and it can go.
func warnLegacyQueue(log *slog.Logger, dir string) {
	path := filepath.Join(dir, QueueFile)
	if _, err := os.Stat(path); err == nil {
		log.Warn("ignoring queue file of an earlier runfleet: the queue now lives in "+StateFile+"; delete it once this version runs", "path", path)
	}
}

// logStart writes the one line that tells an operator where everything is.
func logStart(log *slog.Logger, cfg *config.Config, addr net.Addr, opts Options) {
	base := "http://" + addr.String()
	api := base + "/api/v1/"
	if cfg.Server.APIToken == "" {
		api = "disabled (set server.api_token_env or api_token_file)"
	}
	workers := cfg.Engine.Workers
	if opts.DisableWorkers {
		workers = 0
	}
	pools := make([]string, 0, len(cfg.Pools))
	for _, p := range cfg.Pools {
		pools = append(pools, p.Name)
	}
	attrs := []any{
		"webhook_url", base + "/webhook",
		"api_url", api,
		"healthz_url", base + "/healthz",
		"status_page_url", base + "/",
		"metrics_url", metricsURL(cfg, base),
		"store_dir", cfg.Store.Dir,
		"pools", pools,
		"workers", workers,
		"reconcile_interval", cfg.Engine.ReconcileInterval.String(),
	}
	if cfg.Server.PublicURL != "" {
		metadataURL, _ := metadata.BaseURLs(cfg.Server.PublicURL)
		attrs = append(attrs, "public_url", cfg.Server.PublicURL, "metadata_url", metadataURL)
	}
	if opts.Version != "" {
		attrs = append(attrs, "version", opts.Version)
	}
	log.Info("runfleet serving", attrs...)
}

// newHTTPServer bounds every phase of a request, so slow or stuck clients
// cannot pin connections: headers must arrive in 10 s, a webhook's work is
// capped at 30 s by the intake, and idle keep-alives are dropped.
func newHTTPServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      90 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}
