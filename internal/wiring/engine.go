package wiring

import (
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// EngineOptions are the engine settings the config decides; the caller adds
// the adapters (store, queue, GitHub, providers), the installation id and
// the logger.
func EngineOptions(cfg *config.Config) engine.Options {
	return engine.Options{
		ControllerID:     cfg.ControllerID,
		Pools:            Pools(cfg),
		DeleteBackoffMin: cfg.Engine.DeleteBackoffMin,
		DeleteBackoffMax: cfg.Engine.DeleteBackoffMax,
	}
}

// IntakeOptions are EngineOptions for an intake alone (the webhook): no
// GitHub client, no providers.
func IntakeOptions(cfg *config.Config) engine.IntakeOptions {
	return engine.IntakeOptions{
		ControllerID:     cfg.ControllerID,
		Pools:            Pools(cfg),
		DeleteBackoffMin: cfg.Engine.DeleteBackoffMin,
		DeleteBackoffMax: cfg.Engine.DeleteBackoffMax,
	}
}

// Pools turns the configured pools into the domain's: the policy without
// the YAML (and without the provider settings, which only wiring reads).
func Pools(cfg *config.Config) runner.Pools {
	out := make(runner.Pools, 0, len(cfg.Pools))
	for _, p := range cfg.Pools {
		out = append(out, Pool(&p))
	}
	return out
}

// Pool is one configured pool as the domain sees it.
func Pool(p *config.Pool) runner.Pool {
	return runner.Pool{
		Name:             p.Name,
		Owner:            p.Owner,
		Labels:           append([]string(nil), p.Labels...),
		MinIdle:          p.MinIdle,
		MaxRunners:       p.MaxRunners,
		RunnerGroup:      p.RunnerGroup,
		BootstrapTimeout: p.BootstrapTimeout,
		ProviderTimeout:  p.ProviderTimeout,
	}
}
