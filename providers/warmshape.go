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
