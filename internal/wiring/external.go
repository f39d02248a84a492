package wiring

import (
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/external"
)

// External providers are GARM provider binaries; the pool's name is their
// GARM_POOL_ID and the controller ID their GARM_CONTROLLER_ID. Settings are
// checked here, binary and config file included, so a config naming a
// missing binary fails when the process starts, not at the first job.
func init() {
	providerFactories[external.Type] = func(cfg *config.Config, pool *config.Pool) (providers.Provider, error) {
		settings, err := external.ParseSettings(pool.Provider.Settings)
		if err != nil {
			return nil, err
		}
		return external.New(settings, external.Options{ControllerID: cfg.ControllerID, PoolID: pool.Name})
	}
}
