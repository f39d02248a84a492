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
	// ListArrivals returns, for each of pools, the QueuedAt of every job of
	// that pool queued at or after since that the ledger still keeps (a
	// settled job is kept DeletedRetention), in no particular order; a pool
	// with none has no entry. Every run attempt is an arrival: a re-run
	// wants a runner as much as the first run did. The pools are read
	// together because a store may have to read every job to find one
	// pool's (DynamoDB's Scan): one pass a reconcile, not one per pool. A
	// wrapper over a store that lacks the capability answers an error
	// wrapping errors.ErrUnsupported, which callers read as its absence.
	ListArrivals(ctx context.Context, pools []string, since time.Time) (map[string][]time.Time, error)
}
