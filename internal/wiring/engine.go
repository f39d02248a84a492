package wiring

import (
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/wiring/policy"
)

// EngineOptions are the engine settings the config decides; the caller adds
// the adapters (store, queue, GitHub, providers), the installation id and
// the logger.
func EngineOptions(cfg *config.Config) engine.Options {
	intake := policy.IntakeOptions(cfg)
	return engine.Options{
		ControllerID:     intake.ControllerID,
		Pools:            intake.Pools,
		DeleteBackoffMin: intake.DeleteBackoffMin,
		DeleteBackoffMax: intake.DeleteBackoffMax,
	}
}
