// Package serve assembles embedded mode, `runfleet serve`: one process with
// the store and the durable work queue store.kind chooses (bolt: one bbolt
// file under store.dir holding both; postgres: one database holding both;
// state.go), an HTTP server (webhook intake, operator API, status page, runner
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
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/statuspage"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/wiring"
	"github.com/runfleet/runfleet/providers"
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
	// Version is logged at start; with Commit it is runfleet_build_info's
	// labels.
	Version string
	Commit  string
}

// Run serves until ctx is done, then shuts down in order: stop accepting
// requests and finish those in flight, stop the workers and the reconciler,
// close the queue, close the store. Problems with the configuration
// (provider or GitHub kinds this build lacks, bad provider settings) come
// back at once as joined *config.FieldError values, before anything is
// opened.
//
// Run is the list of what it builds, in order; each step takes only what
// the steps before it made.
func Run(ctx context.Context, opts Options) (err error) {
	if err := opts.check(); err != nil {
		return err
	}
	cfg, log := opts.Config, opts.Logger
	// Until the HTTP servers own the given listeners, a failed start
	// closes them.
	serving := false
	defer func() {
		if !serving {
			opts.closeListeners()
		}
	}()

	// 1. The config, checked in full before anything is opened: a GitHub
	// config the client refuses is reported with the providers' problems.
	if err := checkConfig(cfg); err != nil {
		return err
	}
	// 2. The store and the queue, of the kind store.kind names, and this
	// process's name among the replicas when the store is shared.
	st, err := openState(cfg, log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.close()) }()
	rep := newReplica(st)
	warnProcessLocal(cfg, rep, log)
	// 2b. GitHub, each credential's budget shared through the store when
	// replicas share it.
	gh, err := buildGitHub(cfg, st, log)
	if err != nil {
		return err
	}
	// 2c. The scale-set pools' clients; the engine registers and removes
	// their runners through their scale sets (none: gh as it is).
	engineGitHub, scaleSetPools, err := wiring.ScaleSets(cfg, gh, log)
	if err != nil {
		return err
	}
	// 3. The metrics recorder, which reads the store, the queue and GitHub.
	rec := newRecorder(cfg, st.store, st.deadLetters, gh, metrics.Build{Version: opts.Version, Commit: opts.Commit})
	// 4. The providers, under this installation's pool ids, observed.
	provs, installationID, err := buildProviders(ctx, cfg, st.store, rec, log)
	if err != nil {
		return err
	}
	// 5. The engine, with runner bootstrap when server.public_url is set,
	// heard by the metrics and the status page.
	boot, err := newBootstrap(cfg, log)
	if err != nil {
		return err
	}
	if boot != nil && boot.cache != nil {
		rec.WatchCache(boot.cache.figures)
	}
	page := statuspage.NewRecorder(nil)
	budget := watchBudgets(ctx, cfg, st.store, rec, log)
	eng, err := buildEngine(cfg, st, engineGitHub, provs, installationID, boot, engine.Observers(rec, page, budget), log)
	if err != nil {
		return err
	}
	rec.CountStuck(eng.Stuck)
	listeners, err := buildListeners(cfg.ControllerID, scaleSetPools, eng, st, rep, rec, log)
	if err != nil {
		return err
	}
	// 6. HTTP: the routes, on server.listen and server.metrics_address.
	srv, err := newServers(cfg, opts, eng, st, rec, page, boot, log)
	if err != nil {
		return err
	}
	warnDeadLetters(ctx, st, cfg, log)
	logStart(log, cfg, st, rep, srv.addr(), opts)
	// 7. The workers, 8. the reconciler and 9. the scale-set listeners,
	// in the background. They get their own context, cancelled only once
	// the HTTP servers have finished their requests: a webhook accepted
	// during shutdown is queued before the consumers stop.
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	var background sync.WaitGroup
	startWorkers(workCtx, &background, cfg, opts, eng, st, rep, log)
	startReconciler(workCtx, &background, cfg, eng, st, rep, rec, log)
	if st.soleOwner {
		freeDeadListenerLeases(workCtx, st.store, scaleSetPools, log)
	}
	startListeners(workCtx, &background, listeners, log)
	if boot != nil {
		boot.cache.evictEvery(workCtx, &background, cacheEvictInterval, log)
	}

	serving = true
	err = srv.serveUntil(ctx, opts.ShutdownTimeout, log)
	stopWork()
	background.Wait()
	log.Info("stopped; closing queue and store")
	return err
}

// check fills the defaults of opts and refuses a missing config.
func (opts *Options) check() error {
	if opts.Config == nil {
		return errors.New("serve: no config")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = DefaultShutdownTimeout
	}
	return nil
}

// closeListeners closes the listeners a caller handed over.
func (opts *Options) closeListeners() {
	if opts.Listener != nil {
		_ = opts.Listener.Close()
	}
	if opts.MetricsListener != nil {
		_ = opts.MetricsListener.Close()
	}
}

// checkConfig checks what config.Parse cannot: the providers this build
// has, with their settings, and the GitHub client. Every problem comes
// back at once. Both are built for real later: the providers once the
// store has given the installation id their pool ids derive from, the
// GitHub client once the store its budgets may share is open.
func checkConfig(cfg *config.Config) error {
	_, perr := wiring.Providers(cfg, "config-check")
	gh, gerr := wiring.GitHub(cfg, slog.New(slog.DiscardHandler), nil)
	var serr error
	if gerr == nil {
		_, _, serr = wiring.ScaleSets(cfg, gh, slog.New(slog.DiscardHandler))
	}
	return errors.Join(perr, gerr, serr)
}

// buildGitHub is the GitHub client. On a store one process owns, each
// credential's budget lives in the process; on a store replicas share it
// lives in the store, as on Lambda, so that together they keep to
// GitHub's limits rather than each spending a budget of its own.
func buildGitHub(cfg *config.Config, st *state, log *slog.Logger) (github.GitHub, error) {
	var shared store.Budgets
	if !st.soleOwner {
		shared = st.store
	}
	return wiring.GitHub(cfg, log, shared)
}

// buildProviders makes one provider per pool under the store's
// installation id, every call recorded by rec.
func buildProviders(ctx context.Context, cfg *config.Config, st store.Store, rec metrics.Recorder, log *slog.Logger) (map[string]providers.Provider, string, error) {
	installationID, err := st.InstallationID(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("serve: read the installation id from the store: %w", err)
	}
	provs, err := wiring.ObservedProviders(cfg, installationID, rec, log)
	if err != nil {
		return nil, "", err
	}
	return provs, installationID, nil
}

// buildEngine is the engine over the adapters built before it.
func buildEngine(cfg *config.Config, st *state, gh github.GitHub, provs map[string]providers.Provider,
	installationID string, boot *bootstrap, observer engine.Observer, log *slog.Logger) (*engine.Engine, error) {
	o := wiring.EngineOptions(cfg)
	o.Store, o.Queue, o.GitHub, o.Providers, o.Logger = st.store, st.queue, gh, provs, log
	o.InstallationID = installationID
	o.Deliveries = wiring.Deliveries(cfg, gh)
	o.Prices = wiring.Prices(cfg, provs)
	o.Observer = observer
	// A worker's create is bounded by the visibility timeout (the queue
	// hands its message to another worker then anyway): an instance
	// creating longer than that has lost its worker — to a crash of this
	// process or of another replica — and the reconciler recovers it
	// after the takeover grace, never sooner.
	o.CreatingTimeout = cfg.Engine.VisibilityTimeout
	o.TakeoverGrace = cfg.Engine.TakeoverGrace
	eng, err := engine.New(boot.engineOptions(o))
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	return eng, nil
}

// warnDeadLetters tells the operator about work set aside by an earlier
// run.
func warnDeadLetters(ctx context.Context, st *state, cfg *config.Config, log *slog.Logger) {
	if dead, err := st.deadLetters.DeadLetters(ctx); err == nil && len(dead) > 0 {
		log.Warn("the queue holds dead-lettered messages: work that failed max_receives times and was set aside",
			"dead_letters", len(dead), "max_receives", cfg.Engine.MaxReceives)
	}
}

// startWorkers starts the queue consumers (none with
// Options.DisableWorkers), and first, when this process owns the store
// alone, the recovery of what a crashed predecessor left in flight.
func startWorkers(ctx context.Context, wg *sync.WaitGroup, cfg *config.Config, opts Options, eng *engine.Engine, st *state, rep *replica, log *slog.Logger) {
	// The recovery at start assumes that whatever is creating or deleting
	// has no worker, which holds only when one process owns the store (bolt's
	// file lock). On a store several replicas share, another replica's
	// workers may be at it right now: there the reconciler's timeouts
	// recover a dead replica's work, and what must run once among replicas
	// takes the lease (store.Leases.AcquireLease) instead.
	if st.soleOwner {
		recoverBeside(ctx, wg, eng, log)
	}
	if opts.DisableWorkers {
		if rep != nil {
			scanDeadWork(ctx, wg, eng, nil, log)
		}
		return
	}
	// Among replicas, the workers claim under this replica's liveness
	// (liveness.go), and every replica takes over the work of a dead one.
	life, endLife := rep.startLiveness(log)
	var workLife engine.Life
	if life != nil {
		workLife = life
	}
	if rep != nil {
		scanDeadWork(ctx, wg, eng, workLife, log)
	}
	wg.Go(func() {
		defer endLife()
		eng.Work(ctx, st.queue, engine.WorkerOptions{
			Concurrency: cfg.Engine.Workers,
			Visibility:  cfg.Engine.VisibilityTimeout,
			Life:        workLife,
		})
	})
}

// inFlight is the engine's read of what a crashed predecessor left in
// flight.
type inFlight interface {
	LeftInFlight(ctx context.Context) (*engine.Recovery, error)
}

// recoverBeside reads what is in flight now, before the caller starts a
// worker — read later, it would include this process's own fresh claims,
// and recovering those under their live workers makes two machines of one
// instance (engine.Engine.LeftInFlight) — and recovers it in the
// background, beside the workers and the HTTP server, so intake never
// waits behind slow provider calls. A failure is retried by the
// reconciler, whose timeouts take over a dead process's work.
func recoverBeside(ctx context.Context, wg *sync.WaitGroup, eng inFlight, log *slog.Logger) {
	recovery, err := eng.LeftInFlight(ctx)
	if err != nil {
		log.Warn("reading the work left in flight failed; the reconciler recovers it after its timeouts", "error", err)
		return
	}
	wg.Go(func() {
		if err := recovery.Run(ctx); err != nil {
			log.Warn("recovering work left in flight failed; the reconciler retries it", "error", err)
		}
	})
}

// startReconciler starts the reconcile ticker, which also purges expired
// records when the store does not expire them itself. Among replicas it
// runs in the one holding the reconciler lease (replica.go).
func startReconciler(ctx context.Context, wg *sync.WaitGroup, cfg *config.Config, eng *engine.Engine, st *state, rep *replica,
	rec metrics.Recorder, log *slog.Logger) {
	r := &reconciler{engine: eng, purger: st.purger, interval: cfg.Engine.ReconcileInterval, log: log, metrics: rec}
	ttl := reconcilerLeaseTTL(cfg.Engine.ReconcileInterval)
	wg.Go(func() { rep.runLeading(ctx, ReconcilerLease, ttl, log, r.run) })
}

// logStart writes the one line that tells an operator where everything is.
func logStart(log *slog.Logger, cfg *config.Config, st *state, rep *replica, addr net.Addr, opts Options) {
	base := "http://" + addr.String()
	api := base + "/api/v1/"
	if cfg.Server.APIToken == "" {
		api = "disabled (set " + config.APITokenKeys + ")"
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
		"store", st.where,
		"pools", pools,
		"workers", workers,
		"reconcile_interval", cfg.Engine.ReconcileInterval.String(),
	}
	if cfg.Server.PublicURL != "" {
		metadataURL, _ := metadata.BaseURLs(cfg.Server.PublicURL)
		attrs = append(attrs, "public_url", cfg.Server.PublicURL, "metadata_url", metadataURL)
	}
	if rep != nil {
		attrs = append(attrs, "replica", rep.holder)
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
