package wiring

import (
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/wiring/policy"
)

// EngineOptions are the engine settings the config decides — the
// ledger's (policy.LedgerOptions), none of its own yet; the caller adds the
// adapters (store, queue, GitHub, providers), the installation id and the
// logger.
func EngineOptions(cfg *config.Config) engine.Options {
	return engine.Options{RegistrarOptions: engine.RegistrarOptions{LedgerOptions: policy.LedgerOptions(cfg)}}
}
