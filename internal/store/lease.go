package store

import (
	"context"
	"errors"
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

// ChangeLease is the one primitive an adapter gives the lease operations:
// read the lease name (a free one at Version 0 when none is stored), let
// decide make its next record (nil: nothing to write) and write that at
// the next version, compare-and-set on the version read. It returns what
// it wrote (nil when nothing).
type ChangeLease func(ctx context.Context, name string, decide func(cur *runner.Lease) (*runner.Lease, error)) (*runner.Lease, error)

// NewLeases implements Leases over an adapter's change and read of one
// lease record, so that every adapter asks the domain the same questions
// (runner.Lease.Acquire, Renew, Release) and differs only in how it writes
// the answer. An adapter embeds the result.
func NewLeases(change ChangeLease, get func(ctx context.Context, name string) (*runner.Lease, error)) Leases {
	return leases{change: change, get: get}
}

type leases struct {
	change ChangeLease
	get    func(ctx context.Context, name string) (*runner.Lease, error)
}

func (l leases) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) (*runner.Lease, error) {
	if name == "" {
		return nil, errors.New("store: acquire lease: empty name")
	}
	return l.change(ctx, name, func(cur *runner.Lease) (*runner.Lease, error) {
		return cur.Acquire(holder, ttl, now)
	})
}

func (l leases) RenewLease(ctx context.Context, held *runner.Lease, ttl time.Duration, now time.Time) (*runner.Lease, error) {
	if held == nil || held.Name == "" {
		return nil, errors.New("store: renew lease: no lease")
	}
	return l.change(ctx, held.Name, func(cur *runner.Lease) (*runner.Lease, error) {
		return cur.Renew(held, ttl, now)
	})
}

func (l leases) ReleaseLease(ctx context.Context, held *runner.Lease) error {
	if held == nil || held.Name == "" {
		return errors.New("store: release lease: no lease")
	}
	_, err := l.change(ctx, held.Name, func(cur *runner.Lease) (*runner.Lease, error) {
		next, _ := cur.Release(held)
		return next, nil
	})
	return err
}

func (l leases) GetLease(ctx context.Context, name string) (*runner.Lease, error) {
	return l.get(ctx, name)
}
