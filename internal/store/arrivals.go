package store

import (
	"context"
	"time"
)

// Arrivals reads the job ledger's history as the warm pool forecast needs
// it (internal/warm): when each of a pool's jobs was queued. It is an
// optional capability: a store without it leaves adaptive pools at their
// static floors (min_idle), and the reconciler says so.
type Arrivals interface {
	// ListArrivals returns the QueuedAt of every job of the pool queued at
	// or after since that the ledger still keeps (a settled job is kept
	// DeletedRetention), in no particular order. Every run attempt is an
	// arrival: a re-run wants a runner as much as the first run did. A
	// wrapper over a store that lacks the capability answers an error
	// wrapping errors.ErrUnsupported, which callers read as its absence.
	ListArrivals(ctx context.Context, pool string, since time.Time) ([]time.Time, error)
}
