package wiring

import (
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
)

// EngineOptions are the engine settings the config decides; the caller adds
// the adapters (store, queue, GitHub, providers) and the logger.
func EngineOptions(cfg *config.Config) engine.Options {
	return engine.Options{
		ControllerID:     cfg.ControllerID,
		Pools:            cfg.Pools,
		DeleteBackoffMin: cfg.Engine.DeleteBackoffMin,
		DeleteBackoffMax: cfg.Engine.DeleteBackoffMax,
	}
}
