package providers

import "context"

// WarmShaper is implemented by a WarmSizer that can keep stopped machines
// of several shapes: a pool with shapes keeps its warm machines in the
// shapes its jobs ask for, in proportion, so that a shaped create finds
// one of its own shape to start (a create starts only a warm machine of
// a shape it may launch).
type WarmShaper interface {
	// RefillWarmShapes is RefillWarmTo by shape: Count stopped machines
	// of each Shape (nil: the pool's own machine, whose count the
	// configured size floors). Machines of a shape not listed are
	// replaced.
	RefillWarmShapes(ctx context.Context, pool, poolID string, want []WarmShape) (WarmRefill, error)
}

// WarmShape is how many stopped machines of one shape a pool keeps.
type WarmShape struct {
	Shape *Shape
	Count int
}

// WarmKeeper is implemented by a WarmSizer that keeps stopped machines
// only when configured to: a create starts a stopped machine only in a
// pool whose warm pool is on, so a forecast must not ask such a provider
// for stopped machines while it is off (they would be paid for and never
// started). A WarmSizer without it always keeps them.
type WarmKeeper interface {
	KeepsWarm() bool
}

// KeepsStopped reports whether p keeps stopped machines a forecast may
// ask for: a WarmSizer that is not a WarmKeeper, or one that says so.
func KeepsStopped(p Provider) bool {
	if _, ok := As[WarmSizer](p); !ok {
		return false
	}
	if k, ok := As[WarmKeeper](p); ok {
		return k.KeepsWarm()
	}
	return true
}
