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

// RefillWarmTo passes the optional providers.WarmSizer through likewise;
// a provider that keeps warm machines of a fixed size refills to it.
func (r *Recorder) RefillWarmTo(ctx context.Context, pool, poolID string, size int) (providers.WarmRefill, error) {
	if sizer, ok := r.Provider.(providers.WarmSizer); ok {
		return sizer.RefillWarmTo(ctx, pool, poolID, size)
	}
	return r.RefillWarm(ctx, pool, poolID)
}
