package lambdafn

import (
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// intakeOptions are wiring.IntakeOptions, which this package cannot call:
// package wiring also builds the providers and the GitHub client, so
// importing it would link go-github and the EC2 SDK into the webhook
// function. TestIntakeOptionsMatchWiring keeps the two equal until the
// config-to-engine options live apart from the adapters.
func intakeOptions(cfg *config.Config) engine.IntakeOptions {
	pools := make(runner.Pools, 0, len(cfg.Pools))
	for _, p := range cfg.Pools {
		pools = append(pools, runner.Pool{
			Name:             p.Name,
			Owner:            p.Owner,
			Labels:           append([]string(nil), p.Labels...),
			MinIdle:          p.MinIdle,
			MaxRunners:       p.MaxRunners,
			RunnerGroup:      p.RunnerGroup,
			BootstrapTimeout: p.BootstrapTimeout,
			ProviderTimeout:  p.ProviderTimeout,
		})
	}
	return engine.IntakeOptions{
		ControllerID:     cfg.ControllerID,
		Pools:            pools,
		DeleteBackoffMin: cfg.Engine.DeleteBackoffMin,
		DeleteBackoffMax: cfg.Engine.DeleteBackoffMax,
	}
}
