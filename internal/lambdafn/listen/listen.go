// Package listen is the ListenerFunction: the scale-set pools' listeners
// (internal/listener) on Lambda. An EventBridge schedule invokes it every
// minute; each invocation runs every scale-set pool's listener under its
// store lease until shortly before the invocation's deadline, then stops
// and leaves the message session open, its id and lastMessageId in the
// store, so that the next invocation resumes it. The invocations overlap
// by a few seconds (the function's timeout is longer than the schedule's
// interval), and the lease makes the newcomer stand by until the old one
// lets go: there is always one listener per scale set, never two.
//
// Its intake is the engine's ledger, as the webhook function's is: a job
// becomes a ledger entry and a create message on the work queue, which the
// worker carries out. It builds no provider; its GitHub client only mints
// the scale sets' registration tokens.
package listen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/leader"
	"github.com/runfleet/runfleet/internal/listener"
	"github.com/runfleet/runfleet/internal/wiring"
	"github.com/runfleet/runfleet/internal/wiring/policy"
)

// Defaults for the zero Options, sized for template.yaml's ListenerFunction
// (timeout 75 s, invoked every minute).
const (
	// DefaultMargin is how long before the invocation's deadline the
	// listeners stop: a cut poll returns at once, the lease is released
	// (at most 5 s) and the metrics written, well within it.
	DefaultMargin = 10 * time.Second
	// DefaultLeaseTTL: after an invocation Lambda killed without
	// releasing the lease, the next waits this long; a standby tries
	// every third of it, so a handover costs at most 5 s.
	DefaultLeaseTTL = 15 * time.Second
	// DefaultListenFor bounds an invocation whose context has no deadline
	// (Lambda always gives one).
	DefaultListenFor = time.Minute
	// DefaultStatsGrace replaces the listener's two minutes: its count of
	// how long the ledger has held more waiting jobs than GitHub lives in
	// memory and so starts over with every invocation, which must fit it
	// with room to spare.
	DefaultStatsGrace = 30 * time.Second
)

// Options are what the listener function is built from.
type Options struct {
	lambdafn.Options
	// GitHub, when set, mints the registration tokens instead of the
	// client the config asks for (it must be a
	// scaleset.RegistrationTokenSource, as the REST client is).
	GitHub github.GitHub
	// Margin, LeaseTTL, ListenFor and StatsGrace default to the constants
	// above; tests make them short.
	Margin, LeaseTTL, ListenFor, StatsGrace time.Duration
	// BackoffMin and BackoffMax bound a listener's wait after a failure
	// (default: the listener's).
	BackoffMin, BackoffMax time.Duration
}

// OptionsFunc returns the function's Options when it starts.
type OptionsFunc func(ctx context.Context) (Options, error)

// FromEnvironment reads the deployed function's Options.
func FromEnvironment() OptionsFunc {
	base := lambdafn.FromEnvironment(lambdafn.RoleListener)
	return func(ctx context.Context) (Options, error) {
		opts, err := base(ctx)
		return Options{Options: opts}, err
	}
}

// Report is what one invocation did: the pools it listened for and how
// long it listened.
type Report struct {
	Pools      []string `json:"pools"`
	ListenedMs int64    `json:"listened_ms"`
}

// ScheduleHandler is what lambda.Start runs: the EventBridge schedule's
// ticks.
type ScheduleHandler func(ctx context.Context, ev events.EventBridgeEvent) (Report, error)

// Listener is the ListenerFunction, built from the environment on the
// first invocation.
func Listener() ScheduleHandler { return NewListener(FromEnvironment(), nil) }

// NewListener is the ListenerFunction with its Options from options. A
// failed start is logged to log (nil: JSON lines on stdout) and is the
// invocation's error, so the function's Errors metric (and its alarm)
// shows it; the next tick tries again.
func NewListener(options OptionsFunc, log *slog.Logger) ScheduleHandler {
	app := lambdafn.NewLazy(lambdafn.RoleListener, func(ctx context.Context) (*App, error) {
		opts, err := options(ctx)
		if err != nil {
			return nil, err
		}
		return Build(ctx, opts)
	}, log)
	return func(ctx context.Context, ev events.EventBridgeEvent) (Report, error) {
		a, err := app.Get(ctx)
		if err != nil {
			return Report{}, err
		}
		return a.HandleSchedule(ctx, ev)
	}
}

// App is the listener function's: the shared App, the scale-set pools
// with their clients, and the ledger's settings.
type App struct {
	*lambdafn.App
	pools  []wiring.ScaleSetPool
	ledger engine.LedgerOptions
	opts   Options
}

// Build loads the function's App: the config, the store and the queue,
// the GitHub client that mints registration tokens and one scale-set
// client per owner. Every problem it can see up front is reported here.
func Build(ctx context.Context, opts Options) (*App, error) {
	base, err := lambdafn.Load(ctx, lambdafn.RoleListener, opts.Options)
	if err != nil {
		return nil, err
	}
	installationID, err := base.Store.InstallationID(ctx)
	if err != nil {
		return nil, fmt.Errorf("listen: read the installation id: %w", err)
	}
	gh := opts.GitHub
	if gh == nil {
		// Shares each credential's GitHub budget with the other functions
		// through the store.
		if gh, err = wiring.GitHub(base.Config, base.Logger, base.Store); err != nil {
			return nil, fmt.Errorf("config parameter %s cannot run on Lambda:\n%w", opts.Env.ConfigParameter, err)
		}
	}
	_, pools, err := wiring.ScaleSets(base.Config, gh, base.Logger)
	if err != nil {
		return nil, fmt.Errorf("config parameter %s cannot run on Lambda:\n%w", opts.Env.ConfigParameter, err)
	}
	lo := policy.LedgerOptions(base.Config)
	lo.InstallationID, lo.Store, lo.Queue = installationID, base.Store, base.Queue
	lo.Observer = base.Metrics
	opts.Margin = orDefault(opts.Margin, DefaultMargin)
	opts.LeaseTTL = orDefault(opts.LeaseTTL, DefaultLeaseTTL)
	opts.ListenFor = orDefault(opts.ListenFor, DefaultListenFor)
	opts.StatsGrace = orDefault(opts.StatsGrace, DefaultStatsGrace)
	a := &App{App: base, pools: pools, ledger: lo, opts: opts}
	if _, err := a.listeners(base.Logger); err != nil {
		return nil, err
	}
	return a, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// listeners makes this invocation's listeners, one per scale-set pool,
// over one ledger, all logging through log (with the request id). They
// are made per invocation: the holder names the invocation, so a new
// invocation never passes for an old one that Lambda cut off while it
// held a lease.
func (a *App) listeners(log *slog.Logger) ([]*listener.Listener, error) {
	lo := a.ledger
	lo.Logger = log
	ledger, err := engine.NewLedger(lo)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	holder := leader.HolderID()
	out := make([]*listener.Listener, 0, len(a.pools))
	for i := range a.pools {
		p := &a.pools[i]
		l, err := listener.New(listener.Options{
			Pool: policy.Pool(&p.Pool), ScaleSet: p.ScaleSet, RunnerGroup: p.RunnerGroup,
			Client: listener.ScaleSetClient(p.Client), Intake: ledger, Store: a.Store, Holder: holder, ControllerID: a.Config.ControllerID,
			LeaseTTL: a.opts.LeaseTTL, StatsGrace: a.opts.StatsGrace,
			BackoffMin: a.opts.BackoffMin, BackoffMax: a.opts.BackoffMax,
			KeepSession: true, Observer: a.Metrics, Logger: log,
		})
		if err != nil {
			return nil, fmt.Errorf("listen: pool %s: %w", p.Pool.Name, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// HandleSchedule is one tick: every scale-set pool's listener runs, under
// its lease, until Margin before the invocation's deadline. A listener
// waits out every GitHub failure itself, so the invocation's error is
// only what keeps a listener from running at all.
func (a *App) HandleSchedule(ctx context.Context, ev events.EventBridgeEvent) (Report, error) {
	log := a.InvocationLogger(ctx).With("schedule", ev.Resources, "scheduled_at", ev.Time)
	rep := Report{Pools: make([]string, 0, len(a.pools))}
	for _, p := range a.pools {
		rep.Pools = append(rep.Pools, p.Pool.Name)
	}
	if len(a.pools) == 0 {
		log.InfoContext(ctx, "no scale-set pool in the config; nothing to listen to")
		return rep, nil
	}
	// From here on a listener should be polling: the polls' rollup gets
	// its 0 whatever happens next (the invocation too short, a listener
	// that cannot run, none answered), so ListenerNotPollingAlarm sees a
	// Sum of 0 rather than no data. Flushed on every way out.
	a.Metrics.ListenersScheduled()
	defer a.FlushMetrics(ctx, log)
	stopAt := time.Now().Add(a.opts.ListenFor)
	if deadline, ok := ctx.Deadline(); ok {
		stopAt = deadline.Add(-a.opts.Margin)
	}
	if time.Until(stopAt) <= 0 {
		log.WarnContext(ctx, "the invocation ends too soon to listen; the function's timeout must exceed the margin",
			"margin", a.opts.Margin.String())
		return rep, nil
	}
	listeners, err := a.listeners(log)
	if err != nil {
		return rep, err
	}
	listenCtx, stop := context.WithDeadline(ctx, stopAt)
	defer stop()
	started := time.Now()
	errs := make([]error, len(listeners))
	var wg sync.WaitGroup
	for i, l := range listeners {
		wg.Go(func() { errs[i] = l.Run(listenCtx) })
	}
	wg.Wait()
	rep.ListenedMs = time.Since(started).Milliseconds()
	if err := errors.Join(errs...); err != nil {
		log.ErrorContext(ctx, "a scale-set listener could not run; its pool got no job this invocation", "error", err)
		return rep, err
	}
	log.InfoContext(ctx, "listeners stopped for the next invocation to take over", "pools", rep.Pools, "listened_ms", rep.ListenedMs)
	return rep, nil
}
