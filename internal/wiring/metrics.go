package wiring

import (
	"log/slog"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

// ObservedProviders is Providers with every call recorded by rec (pool,
// operation, result and duration): both modes build their providers here,
// so the provider figures mean the same in both. The pools whose machines
// are simulated are announced on log as loudly as a simulated GitHub
// (GitHub): a reader of the start log must not take them for real ones.
func ObservedProviders(cfg *config.Config, installationID string, rec metrics.Recorder, log *slog.Logger) (map[string]providers.Provider, error) {
	provs, err := Providers(cfg, installationID)
	if err != nil {
		return nil, err
	}
	var simulatedPools []string
	for _, p := range cfg.Pools {
		if p.Provider.Type == simulated.Type {
			simulatedPools = append(simulatedPools, p.Name)
		}
	}
	if len(simulatedPools) > 0 {
		log.Warn("machines are SIMULATED (provider type simulated): in-memory records, no machine is ever started; for demos and tests only",
			"simulated_pools", simulatedPools)
	}
	return metrics.ObserveProviders(provs, rec), nil
}
