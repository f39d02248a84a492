package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testclock"
)

// PurgerStore is a store that removes expired records when told (bbolt,
// PostgreSQL), whose clock the test drives.
type PurgerStore interface {
	store.Store
	store.Purger
}

// LeasePurge checks a Purger's removal of once-only leases: a lapsed
// replica life's liveness lease and a machine's cache binding go an hour
// after they lapsed, a released one at once; a fixed-name lease, a bare
// prefix and a lease within its grace stay; the removed lease's holder
// cannot renew it. clock is s's clock.
func LeasePurge(t *testing.T, s PurgerStore, clock *testclock.Clock) {
	t.Helper()
	ctx := context.Background()
	acquire := func(name string, ttl time.Duration) *runner.Lease {
		t.Helper()
		l, err := s.AcquireLease(ctx, name, "h", ttl, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	gone := []string{"replica/a", "replica/b", "replica/c_d", "cache-job/i-1", "cache-job/i-2"}
	var life *runner.Lease
	for _, name := range gone {
		life = acquire(name, 15*time.Second)
	}
	kept := []string{"reconciler", "listener/7", "replica/", "cache-job/i-3"}
	for _, name := range kept[:3] {
		acquire(name, 15*time.Second)
	}
	acquire(kept[3], 2*time.Hour) // lapses later
	// A life that ended cleanly released its lease: it goes at once.
	released := acquire("replica/released", time.Hour)
	if err := s.ReleaseLease(ctx, released); err != nil {
		t.Fatal(err)
	}
	gone = append(gone, released.Name)
	clock.Advance(15*time.Second + store.DisposableLeaseGrace)

	if n, err := s.PurgeExpired(ctx); err != nil || n != len(gone) {
		t.Fatalf("PurgeExpired = %d, %v; want %d", n, err, len(gone))
	}
	for _, name := range gone {
		if l, err := s.GetLease(ctx, name); err != nil || l.Version != 0 {
			t.Errorf("lease %s = %+v, %v; want it removed (read as never written)", name, l, err)
		}
	}
	for _, name := range kept {
		if l, err := s.GetLease(ctx, name); err != nil || l.Version == 0 {
			t.Errorf("lease %s = %+v, %v; want it kept", name, l, err)
		}
	}
	if _, err := s.RenewLease(ctx, life, 15*time.Second, clock.Now()); !errors.Is(err, runner.ErrLeaseLost) {
		t.Errorf("renewing a removed lease: %v, want ErrLeaseLost", err)
	}
	if n, err := s.PurgeExpired(ctx); err != nil || n != 0 {
		t.Fatalf("second PurgeExpired = %d, %v; want 0", n, err)
	}
}
