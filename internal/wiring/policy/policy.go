// Package policy turns the configured pools into the domain's
// (runner.Pool) and the options the engine's ledger runs with. It imports
// no adapter — no GitHub client, no provider — so the webhook function can
// use it and still link neither.
package policy

import (
	"maps"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// LedgerOptions are the ledger's settings the config decides; the caller
// adds the store, the queue, the installation id and the logger.
func LedgerOptions(cfg *config.Config) engine.LedgerOptions {
	return engine.LedgerOptions{
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
	for i := range cfg.Pools {
		out = append(out, Pool(&cfg.Pools[i]))
	}
	return out
}

// Pool is one configured pool as the domain sees it.
func Pool(p *config.Pool) runner.Pool {
	// config.Validate refused an owner that does not parse; a config that
	// skipped it gets a pool with no owner, which serves no job.
	owner, err := runner.ParseOwner(p.Owner)
	if err != nil {
		owner = runner.Owner{}
	}
	return runner.Pool{
		Name:             p.Name,
		Owner:            owner,
		Labels:           append([]string(nil), p.Labels...),
		MinIdle:          p.MinIdle,
		MaxRunners:       p.MaxRunners,
		RunnerGroup:      p.RunnerGroup,
		BootstrapTimeout: p.BootstrapTimeout,
		ProviderTimeout:  p.ProviderTimeout,
		Shapes:           ShapePolicy(p.Shapes),
		SpotBreaker: runner.SpotBreakerPolicy{
			Interruptions: p.SpotBreaker.Interruptions, Window: p.SpotBreaker.Window, Cooldown: p.SpotBreaker.Cooldown,
		},
		ScaleSet: scaleSetName(p.ScaleSet),
		Warm:     warmPolicy(p.Warm),
	}
}

// warmPolicy is a pool's warm: section as the domain's policy; nil (no
// target) stays nil.
func warmPolicy(w *config.Warm) *runner.WarmPolicy {
	if w == nil {
		return nil
	}
	return &runner.WarmPolicy{Target: w.TargetQueueTime, Percentile: w.Percentile, MaxIdle: w.MaxIdle}
}

// scaleSetName is the scale set feeding a pool, "" for webhooks.
func scaleSetName(s *config.ScaleSet) string {
	if s == nil {
		return ""
	}
	return s.Name
}

// ShapePolicy is a pool's configured shapes as the domain's policy; nil
// (no shapes) stays nil.
func ShapePolicy(s *config.Shapes) *runner.ShapePolicy {
	if s == nil {
		return nil
	}
	return &runner.ShapePolicy{
		Families:     append([]string(nil), s.Families...),
		MaxCPU:       s.MaxCPU,
		MaxMemoryGiB: s.MaxMemory,
		MaxDiskGiB:   s.MaxDisk,
		Spot:         s.Spot,
		Images:       maps.Clone(s.Images),
	}
}
