package bolt

import (
	"context"
	"errors"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/boltcommit"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

var _ store.Leases = (*Store)(nil)

// AcquireLease implements store.Leases.
func (s *Store) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) (*runner.Lease, error) {
	return s.changeLease(ctx, name, func(cur *runner.Lease) (*runner.Lease, error) {
		return cur.Acquire(holder, ttl, now)
	})
}

// RenewLease implements store.Leases.
func (s *Store) RenewLease(ctx context.Context, held *runner.Lease, ttl time.Duration, now time.Time) (*runner.Lease, error) {
	if held == nil {
		return nil, errors.New("bolt: renew lease: nil lease")
	}
	return s.changeLease(ctx, held.Name, func(cur *runner.Lease) (*runner.Lease, error) {
		return cur.Renew(held, ttl, now)
	})
}

// ReleaseLease implements store.Leases.
func (s *Store) ReleaseLease(ctx context.Context, held *runner.Lease) error {
	if held == nil {
		return errors.New("bolt: release lease: nil lease")
	}
	_, err := s.changeLease(ctx, held.Name, func(cur *runner.Lease) (*runner.Lease, error) {
		next, ok := cur.Release(held)
		if !ok {
			return nil, errNoChange
		}
		return next, nil
	})
	if errors.Is(err, errNoChange) {
		return nil
	}
	return err
}

// GetLease implements store.Leases.
func (s *Store) GetLease(ctx context.Context, name string) (*runner.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: lease %s: %w", name, err)
	}
	l, err := leaseKind.load(s, name)
	if err != nil || l != nil {
		return l, err
	}
	return &runner.Lease{Name: name}, nil
}

// changeLease reads, decides and writes the lease in one transaction, so
// no other writer can come between the read and the write; the write is
// still the kind's compare-and-set, as for every record. decide runs
// inside the transaction, possibly more than once: it may only use what
// it is given (the caller's now, not the clock).
func (s *Store) changeLease(ctx context.Context, name string, decide func(cur *runner.Lease) (*runner.Lease, error)) (*runner.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: lease %s: %w", name, err)
	}
	if name == "" {
		return nil, errors.New("bolt: lease: empty name")
	}
	var written *runner.Lease
	err := s.update(func(tx *bbolt.Tx) error {
		written = nil
		cur, err := leaseKind.get(tx, name)
		if err != nil {
			return err
		}
		if cur == nil {
			cur = &runner.Lease{Name: name}
		}
		next, err := decide(cur)
		if err != nil {
			if err == errNoChange {
				return err
			}
			return boltcommit.Unchanged(err)
		}
		record := *next
		record.Version = cur.Version + 1
		if err := leaseKind.compareAndSet(tx, store.Expect(store.KindLease, name, "", cur.Version), &record); err != nil {
			return err
		}
		written = &record
		return nil
	})
	if err != nil {
		return nil, err
	}
	return written, nil
}
