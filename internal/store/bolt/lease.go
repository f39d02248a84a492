package bolt

import (
	"context"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/boltcommit"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// leases gives a Store its store.Leases (embedded), over changeLease.
func (s *Store) leases() store.Leases {
	return store.NewLeases(s.changeLease, func(ctx context.Context, name string) (*runner.Lease, error) {
		return leaseKind.find(ctx, s, name)
	})
}

// changeLease is store.ChangeLease in one transaction, so no other writer
// can come between the read and the write; the write is still the kind's
// compare-and-set, as for every record. decide runs inside the
// transaction, possibly more than once: it may only use what it is given
// (the caller's now, not the clock).
func (s *Store) changeLease(ctx context.Context, name string, decide func(cur *runner.Lease) (*runner.Lease, error)) (*runner.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: lease %s: %w", name, err)
	}
	var written *runner.Lease
	err := s.update(func(tx *bbolt.Tx) error {
		written = nil
		cur, err := leaseKind.get(tx, name)
		if err != nil {
			return err
		}
		if cur == nil {
			cur = leaseKind.zero(name)
		}
		next, err := decide(cur)
		if err != nil {
			return boltcommit.Unchanged(err)
		}
		if next == nil {
			return errNoChange
		}
		record := *next
		record.Version = cur.Version + 1
		if err := leaseKind.compareAndSet(tx, store.Expect(store.KindLease, name, "", cur.Version), &record); err != nil {
			return err
		}
		written = &record
		return nil
	})
	if errors.Is(err, errNoChange) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return written, nil
}
