package enginetest

import (
	"context"

	"github.com/runfleet/runfleet/providers"
)

// RefillWarm passes the optional providers.WarmPool through to the
// provider the Recorder stands in front of, so the engine sees a warm pool
// where the provider has one; for any other provider it does nothing.
func (r *Recorder) RefillWarm(ctx context.Context, pool, poolID string) (providers.WarmRefill, error) {
	if warm, ok := r.Provider.(providers.WarmPool); ok {
		return warm.RefillWarm(ctx, pool, poolID)
	}
	return providers.WarmRefill{}, nil
}
