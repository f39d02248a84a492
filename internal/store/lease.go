package store

import (
	"context"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// Leases keeps named leases (runner.Lease): who may act alone, for now —
// one reconciler among replicas, one listener per scale set, one writer of
// a shared budget. A lease is one small record per name, written by
// compare-and-set like every other record; who may take it is the
// domain's decision (runner.Lease.Acquire, Renew, Release).
//
// Time is the caller's: now comes from its clock (a fake one in tests),
// and expiry compares it with ExpiresAt, which the holder's clock set, so
// holders' clocks must agree within a margin well below the TTL.
type Leases interface {
	// AcquireLease takes the lease name for holder until now+ttl if it is
	// free (never taken, released, or expired at now) or holder's already
	// (then it is extended). Of many holders acquiring at once exactly one
	// wins; the others get a *runner.LeaseHeldError (ErrLeaseHeld). The
	// lease returned is what holder must give RenewLease and ReleaseLease.
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) (*runner.Lease, error)
	// RenewLease extends held to now+ttl if the stored lease is still
	// exactly held (same holder, same version); otherwise it writes
	// nothing and returns a *runner.LeaseLostError (ErrLeaseLost).
	RenewLease(ctx context.Context, held *runner.Lease, ttl time.Duration, now time.Time) (*runner.Lease, error)
	// ReleaseLease frees held if it is still the stored holding, so the
	// next holder need not wait for it to expire. Releasing a lease that
	// was lost already changes nothing and is not an error.
	ReleaseLease(ctx context.Context, held *runner.Lease) error
	// GetLease returns the stored lease; a name never written reads as a
	// free lease at Version 0, never an error.
	GetLease(ctx context.Context, name string) (*runner.Lease, error)
}
