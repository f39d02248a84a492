// Package work holds the Lambda functions of the engine's work side: the
// worker, the reconciler and the operator's delete. They call GitHub (and
// the worker and reconciler the providers), so they alone link the GitHub
// client and the provider SDKs; the webhook and metadata functions, in
// package lambdafn, link neither.
//
// functions/<name>/main.go hands Worker(), Reconciler() or ForceDelete() to
// lambda.Start.
package work

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/wiring"
	"github.com/runfleet/runfleet/providers"
)

// Options are what a work function is built from.
type Options struct {
	lambdafn.Options
	// GitHub and Providers, when set, are used instead of what the config
	// asks for: tests give several functions one simulated GitHub and one
	// set of simulated machines, as a real GitHub and cloud are shared.
	GitHub    github.GitHub
	Providers map[string]providers.Provider
}

// OptionsFunc returns a work function's Options when it starts.
type OptionsFunc func(ctx context.Context) (Options, error)

// FromEnvironment reads a deployed work function's Options (see
// lambdafn.FromEnvironment).
func FromEnvironment(role lambdafn.Role) OptionsFunc {
	base := lambdafn.FromEnvironment(role)
	return func(ctx context.Context) (Options, error) {
		opts, err := base(ctx)
		return Options{Options: opts}, err
	}
}

// App is a work function's: the shared App plus the GitHub client, a
// provider per pool and the engine's settings. Its handlers make a fresh
// engine per invocation (a few allocations) so every line it logs names the
// Lambda request.
type App struct {
	*lambdafn.App
	GitHub    github.GitHub
	Providers map[string]providers.Provider

	engineOptions engine.Options
	// legacyMigrated and legacyMigrationFailures track the one-off move
	// of old-layout live instances (migrate.go); Lambda runs one
	// invocation at a time per environment, so no lock.
	legacyMigrated          bool
	legacyMigrationFailures int
	// cacheEvictor is the reconciler's eviction of the actions/cache
	// index (cacheevict.go), nil when it has none to run.
	cacheEvictor *cacheEvictor
}

// Build loads role's App and builds its GitHub client and providers. Every
// problem it can see up front (config, providers, GitHub) is reported here,
// all at once, at the first invocation.
func Build(ctx context.Context, role lambdafn.Role, opts Options) (*App, error) {
	switch role {
	case lambdafn.RoleWorker, lambdafn.RoleReconciler, lambdafn.RoleForceDelete:
	default:
		return nil, fmt.Errorf("work: %q is not a work function", role)
	}
	base, err := lambdafn.Load(ctx, role, opts.Options)
	if err != nil {
		return nil, err
	}
	// Read once per execution environment: pools' provider-side ids derive
	// from it, and providers list and tag machines by them.
	installationID, err := base.Store.InstallationID(ctx)
	if err != nil {
		return nil, fmt.Errorf("work: read the installation id: %w", err)
	}
	provs, gh := opts.Providers, opts.GitHub
	var problems []error
	// An operator's delete runs in the worker: forcedelete builds no
	// provider (and needs no provider binary or cloud permission).
	if provs == nil && role != lambdafn.RoleForceDelete {
		provs, err = wiring.ObservedProviders(base.Config, installationID, base.Metrics, base.Logger)
		problems = append(problems, err)
	} else {
		provs = metrics.ObserveProviders(provs, base.Metrics)
	}
	if gh == nil {
		// Many invocations run at once, each in its own execution
		// environment: they share each credential's GitHub budget through
		// the store, so together they keep to GitHub's limits.
		gh, err = wiring.GitHub(base.Config, base.Logger, base.Store)
		problems = append(problems, err)
	}
	engineGitHub := gh
	if gh != nil {
		// A scale-set pool's runners get their JIT configs from, and are
		// removed through, its scale set (a scale set gives its jobs to its
		// own runners only); every other pool's go through gh as before,
		// and a config without scale-set pools gets gh itself.
		engineGitHub, _, err = wiring.ScaleSets(base.Config, gh, base.Logger)
		problems = append(problems, err)
	}
	if err := errors.Join(problems...); err != nil {
		return nil, fmt.Errorf("config parameter %s cannot run on Lambda:\n%w", opts.Env.ConfigParameter, err)
	}

	o := wiring.EngineOptions(base.Config)
	o.InstallationID = installationID
	o.Store, o.Queue, o.GitHub, o.Providers = base.Store, base.Queue, engineGitHub, provs
	o.Observer = base.Metrics
	// Built once per execution environment: its price cache lives as long.
	o.Prices = wiring.Prices(base.Config, provs)
	if role == lambdafn.RoleReconciler {
		// Only the reconcile pass reads the webhook delivery log.
		o.Deliveries = wiring.Deliveries(base.Config, gh)
	}
	// No worker outlives its function timeout, so a creating instance older
	// than that has lost its worker, whatever the pool's bootstrap timeout.
	o.CreatingTimeout = opts.Env.WorkerTimeout
	// One engine is built per invocation (for its logger); what an engine
	// remembers (runner downloads, spot breaker readings) lives as long as
	// the execution environment instead.
	o.Memory = engine.NewMemory()
	if base.Tokens != nil && base.MetadataURL != "" {
		// Runner bootstrap: tokens are minted and providers get the
		// metadata function's URLs.
		o.MetadataURL, o.CallbackURL = metadata.BaseURLs(base.MetadataURL)
		o.InstanceToken = base.Tokens.Mint
	}
	app := &App{App: base, GitHub: gh, Providers: provs, engineOptions: o}
	if role == lambdafn.RoleReconciler {
		app.cacheEvictor = newCacheEvictor(app, opts)
	}
	if role == lambdafn.RoleForceDelete {
		_, err = app.registrar(base.Logger)
	} else {
		_, err = app.engine(base.Logger)
	}
	if err != nil {
		return nil, err
	}
	return app, nil
}

// registrar makes the engine's registrar tier for one invocation: what
// an operator's delete needs, without providers.
func (a *App) registrar(log *slog.Logger) (*engine.Registrar, error) {
	o := a.engineOptions.RegistrarOptions
	o.Logger = log
	r, err := engine.NewRegistrar(o)
	if err != nil {
		return nil, fmt.Errorf("work: %w", err)
	}
	return r, nil
}

// engine makes the engine for one invocation, logging through log.
func (a *App) engine(log *slog.Logger) (*engine.Engine, error) {
	o := a.engineOptions
	o.Logger = log
	eng, err := engine.New(o)
	if err != nil {
		return nil, fmt.Errorf("work: %w", err)
	}
	return eng, nil
}
