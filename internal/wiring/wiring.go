// Package wiring turns a validated config into the adapters both modes run
// on — one provider per pool and the GitHub client — so `runfleet serve` and
// the Lambda functions build them the same way.
package wiring

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/budget"
	"github.com/runfleet/runfleet/internal/github/budget/storemeter"
	"github.com/runfleet/runfleet/internal/github/rest"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/github/spread"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

// ProviderFactory builds a pool's provider from its config, for the pool's
// provider-side id (runner.PoolID: what the provider tags and lists by).
type ProviderFactory func(cfg *config.Config, pool *config.Pool, poolID string) (providers.Provider, error)

// providerFactories are the provider types this build can run.
var providerFactories = map[string]ProviderFactory{
	simulated.Type: func(_ *config.Config, pool *config.Pool, _ string) (providers.Provider, error) {
		return simulated.New(pool.Provider.Settings)
	},
}

// ProviderTypes lists the provider types available in this build.
func ProviderTypes() []string {
	types := make([]string, 0, len(providerFactories))
	for t := range providerFactories {
		types = append(types, t)
	}
	sort.Strings(types)
	return types
}

// Providers makes one provider per pool. Every problem is a
// *config.FieldError naming the pool's field; all are returned at once, in
// pool order.
//
// installationID is the store's (store.Store.InstallationID): each pool's
// provider works under runner.PoolID(installationID, pool), never the bare
// pool name another installation may share.
func Providers(cfg *config.Config, installationID string) (map[string]providers.Provider, error) {
	var problems []error
	out := make(map[string]providers.Provider, len(cfg.Pools))
	for i := range cfg.Pools {
		pool := &cfg.Pools[i]
		factory, ok := providerFactories[pool.Provider.Type]
		if !ok {
			problems = append(problems, fieldError(fmt.Sprintf("pools[%d].provider.type", i),
				"pool %q: provider type %q is not available in this build (available: %s)",
				pool.Name, pool.Provider.Type, strings.Join(ProviderTypes(), ", ")))
			continue
		}
		p, err := factory(cfg, pool, runner.PoolID(installationID, pool.Name))
		if err != nil {
			problems = append(problems, fieldError(fmt.Sprintf("pools[%d].provider.settings", i), "pool %q: %v", pool.Name, err))
			continue
		}
		out[pool.Name] = p
	}
	return out, errors.Join(problems...)
}

// GitHub returns the GitHub client the config asks for: the real client
// (internal/github/rest) authenticated as the App or with the token, or the
// simulation, announced with a loud warning: it keeps its runners in this
// process only. The real client caches one authenticated client per App
// installation, so build it once per process and keep it (on Lambda, once
// per execution environment).
//
// shared, when set, keeps every credential's budget in the store
// (storemeter), so that all the processes using it — Lambda's concurrent
// worker, reconciler and delete invocations — spend from one budget; nil
// keeps each budget in this process, as one `runfleet serve` needs.
func GitHub(cfg *config.Config, log *slog.Logger, shared store.Budgets) (github.GitHub, error) {
	gh := cfg.GitHub
	var meters func(string) budget.Meter
	if shared != nil {
		meters = storemeter.For(shared)
	}
	switch {
	case gh.Simulated:
		log.Warn("GitHub is SIMULATED (github.simulated: true): no real runner is ever registered and no real job ever runs; for demos and tests only",
			"github_simulated", true)
		return ghsim.New(), nil
	case gh.App != nil:
		return apps(gh, log, meters)
	case gh.Token != "":
		client, err := rest.New(rest.Options{BaseURL: gh.BaseURL, Token: gh.Token, Budget: budgetLimits(gh.Budget), Meters: meters, Logger: log})
		if err != nil {
			return nil, fieldError("github", "%v", err)
		}
		log.Info("GitHub: authenticating with a personal access token", "base_url", baseURLOrDefault(gh.BaseURL))
		return client, nil
	default:
		return nil, fieldError("github", "no GitHub authentication configured: set app (id, private_key_file/private_key_env), token_file/token_env, or simulated: true")
	}
}

func baseURLOrDefault(u string) string {
	if u == "" {
		return "https://api.github.com"
	}
	return u
}

func fieldError(field, format string, args ...any) error {
	return &config.FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// budgetLimits turns the config's budget section into the client's limits
// (zero fields keep the budget package's defaults).
func budgetLimits(b config.GitHubBudget) budget.Limits {
	return budget.Limits{PointsPerMinute: b.PointsPerMinute, MaxInFlight: b.MaxInFlight}
}

// apps is the GitHub port over the App and the extra Apps that lend it
// their budget: one client, or the spread over all of them.
func apps(gh config.GitHub, log *slog.Logger, meters func(string) budget.Meter) (github.GitHub, error) {
	all := append([]config.App{*gh.App}, gh.ExtraApps...)
	clients := make([]spread.App, 0, len(all))
	for i, app := range all {
		field := "github.app"
		if i > 0 {
			field = fmt.Sprintf("github.extra_apps[%d]", i-1)
		}
		if len(app.PrivateKey) == 0 {
			return nil, fieldError(field, "the App's private key was not loaded (set private_key_file or private_key_env)")
		}
		client, err := rest.New(rest.Options{
			BaseURL:        gh.BaseURL,
			AppID:          app.ID,
			InstallationID: app.InstallationID,
			PrivateKey:     app.PrivateKey,
			Budget:         budgetLimits(gh.Budget),
			Meters:         meters,
			Logger:         log,
		})
		if err != nil {
			return nil, fieldError(field, "%v", err)
		}
		clients = append(clients, client)
	}
	log.Info("GitHub: authenticating as an App", "app_id", gh.App.ID, "installation_id", gh.App.InstallationID,
		"extra_apps", len(gh.ExtraApps), "base_url", baseURLOrDefault(gh.BaseURL))
	if len(clients) == 1 {
		return clients[0], nil
	}
	return spread.New(clients, log)
}
