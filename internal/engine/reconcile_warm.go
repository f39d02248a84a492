package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/runfleet/runfleet/providers"
)

// refillWarmMachines lets each pool whose provider keeps stopped warm
// machines (providers.WarmPool) replace the ones that cannot serve and
// launch the shortfall: to warm_pool.size, or to the size a pool with a
// queue-time target decided this pass (providers.WarmSizer). Warm machines are not instances: nothing is
// recorded in the store and nothing counts against max_runners.
func (e *Engine) refillWarmMachines(ctx context.Context) error {
	var errs []error
	for i := range e.pools {
		pool := &e.pools[i]
		warm, ok := providers.As[providers.WarmPool](e.providers[pool.Name])
		if !ok {
			continue
		}
		log := e.log.With("pool", pool.Name, "reconciler", true)
		rctx, cancel := context.WithTimeout(ctx, e.providerTimeout(pool.Name))
		var got providers.WarmRefill
		var err error
		sizer, canSize := providers.As[providers.WarmSizer](e.providers[pool.Name])
		shaper, canShape := providers.As[providers.WarmShaper](e.providers[pool.Name])
		stopped, decided := e.memory.warm.stopped(pool.Name)
		switch {
		case pool.Warm != nil && decided && pool.Shapes != nil && canShape:
			// A pool with shapes: the forecast's stopped machines in the
			// shapes its jobs ask for (stoppedShapes).
			var want []providers.WarmShape
			if want, err = e.stoppedShapes(rctx, pool, stopped); err == nil {
				got, err = shaper.RefillWarmShapes(rctx, pool.Name, pool.ID, want)
			}
		case pool.Warm != nil && canSize && decided:
			// A pool with a queue-time target: the stopped machines its
			// forecast asks for, warm_pool.size the provider's floor.
			got, err = sizer.RefillWarmTo(rctx, pool.Name, pool.ID, stopped)
		default:
			got, err = warm.RefillWarm(rctx, pool.Name, pool.ID)
		}
		cancel()
		if err != nil {
			log.Warn("refilling the warm machines failed; the next pass retries", "error", err, "launched", got.Launched, "replaced", got.Replaced)
			errs = append(errs, fmt.Errorf("refill warm machines of pool %s: %w", pool.Name, err))
			continue
		}
		if got.Launched > 0 || got.Replaced > 0 {
			log.Info("warm machines refilled", "launched", got.Launched, "replaced", got.Replaced, "ready", got.Ready)
		}
	}
	return errors.Join(errs...)
}
