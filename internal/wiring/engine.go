package wiring

import (
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/webhook"
	"github.com/runfleet/runfleet/internal/wiring/policy"
)

// EngineOptions are the engine settings the config decides — the
// ledger's (policy.LedgerOptions), none of its own yet; the caller adds the
// adapters (store, queue, GitHub, providers), the installation id and the
// logger.
func EngineOptions(cfg *config.Config) engine.Options {
	return engine.Options{RegistrarOptions: engine.RegistrarOptions{LedgerOptions: policy.LedgerOptions(cfg)}}
}

// Deliveries is the engine's recovery of lost webhook deliveries for the
// GitHub client gh: on when runfleet authenticates as a GitHub App, whose
// JWT reads the App's delivery log; nil with a token (whose hooks' logs
// need a hook id runfleet is not configured with) or the simulation. Only
// the reconcile pass uses it.
func Deliveries(cfg *config.Config, gh github.GitHub) *engine.DeliveryRecovery {
	log, ok := gh.(github.DeliveryLog)
	if !ok || cfg.GitHub.App == nil {
		return nil
	}
	return &engine.DeliveryRecovery{Log: log, Parse: webhook.ParseRecovered}
}
