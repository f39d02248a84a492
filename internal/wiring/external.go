package wiring

import (
	"log/slog"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/external"
)

// External providers are GARM provider binaries: GARM_CONTROLLER_ID is the
// controller ID, GARM_POOL_ID the pool's provider-side id (never its name,
// which another installation on the same cloud account may share). Each
// pool gets its own provider, so the commands that carry no pool (deletes
// under interface v0.1.1) still send the right one. Settings are checked
// here, binary and config file included, so a config naming a missing
// binary fails when the process starts, not at the first job.
func init() {
	providerFactories[external.Type] = func(cfg *config.Config, pool *config.Pool, poolID string) (providers.Provider, error) {
		settings, err := external.ParseSettings(pool.Provider.Settings)
		if err != nil {
			return nil, err
		}
		return external.New(settings, external.Options{
			ControllerID: cfg.ControllerID,
			PoolID:       poolID,
			Logger:       slog.Default().With("pool", pool.Name),
		})
	}
}
