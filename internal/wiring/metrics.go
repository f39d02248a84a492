package wiring

import (
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/providers"
)

// ObservedProviders is Providers with every call recorded by rec (pool,
// operation, result and duration): both modes build their providers here,
// so the provider figures mean the same in both.
func ObservedProviders(cfg *config.Config, installationID string, rec metrics.Recorder) (map[string]providers.Provider, error) {
	provs, err := Providers(cfg, installationID)
	if err != nil {
		return nil, err
	}
	return metrics.ObserveProviders(provs, rec), nil
}
