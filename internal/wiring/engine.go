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
// GitHub client gh: the App's own delivery log when runfleet
// authenticates as a GitHub App (its JWT reads it), and the log of each
// organization or repository webhook named in github.hooks (read with the
// token, or the App's installation on the hook's owner). nil when there is
// none to read (a token without hooks, the simulation). Only the
// reconcile pass uses it.
func Deliveries(cfg *config.Config, gh github.GitHub) *engine.DeliveryRecovery {
	var logs []engine.DeliverySource
	if log, ok := gh.(github.DeliveryLog); ok && cfg.GitHub.App != nil {
		logs = append(logs, engine.AppDeliveries(log))
	}
	if hooks, ok := gh.(github.HookDeliveryLogs); ok {
		for _, h := range cfg.GitHub.Hooks {
			hook, err := github.ParseHook(h.Owner, h.ID)
			if err != nil {
				continue // config.Validate refused it at load
			}
			logs = append(logs, engine.HookDeliveries(hook, hooks.HookDeliveries(hook)))
		}
	}
	if len(logs) == 0 {
		return nil
	}
	return &engine.DeliveryRecovery{Logs: logs, Parse: webhook.ParseRecovered}
}
