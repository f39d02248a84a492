package bolt

import (
	"context"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// leases gives a Store its store.Leases (embedded), over changeLease.
func (s *Store) leases() store.Leases {
	return store.NewLeases(s.changeLease, func(ctx context.Context, name string) (*runner.Lease, error) {
		return leaseKind.find(ctx, s, name)
	})
}

// changeLease is store.ChangeLease: the kind's generic change, in one
// transaction, so no other writer can come between the read and the
// write. decide may only use what it is given (the caller's now, not the
// clock).
func (s *Store) changeLease(ctx context.Context, name string, decide func(cur *runner.Lease) (*runner.Lease, error)) (*runner.Lease, error) {
	return leaseKind.change(ctx, s, name, decide)
}
