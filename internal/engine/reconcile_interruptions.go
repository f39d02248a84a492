package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
)

// pollInterruptions is `runfleet serve`'s stand-in for EventBridge: it asks
// each pool's provider that can tell (providers.InterruptionLister) which
// machines it took back, and handles each as an interruption notice. A
// machine handled before changes nothing (HandleInterruption is
// idempotent); one no live instance runs on is ignored.
func (e *Engine) pollInterruptions(ctx context.Context, rep *ReconcileReport) error {
	var errs []error
	for _, pool := range e.pools {
		lister, ok := providers.As[providers.InterruptionLister](e.providers[pool.Name])
		if !ok {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, e.providerTimeout(pool.Name))
		machines, err := lister.ListInterrupted(lctx, pool.ID)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("list interrupted machines of pool %s: %w", pool.Name, err))
			continue
		}
		for _, m := range machines {
			if m.ProviderID == "" {
				continue
			}
			n := InterruptionNotice{
				ProviderID: m.ProviderID, Pool: pool.Name, Instance: m.Name, Kind: runner.InterruptionSpot, Source: "reconciler",
			}
			if !m.TakenBackAt.IsZero() {
				n.Since = m.TakenBackAt.Add(-SpotWarningLead)
			}
			result, err := e.HandleInterruption(ctx, n)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if result == InterruptionMarked || result == InterruptionReplaced {
				rep.Interrupted++
			}
		}
	}
	return errors.Join(errs...)
}
