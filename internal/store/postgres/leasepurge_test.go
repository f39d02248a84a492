package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/postgres"
	"github.com/runfleet/runfleet/internal/testclock"
)

// A lapsed replica life's liveness lease and a machine's cache binding go
// an hour after they lapsed; a fixed-name lease and one within its grace
// stay; the removed lease's holder cannot renew it.
func TestPurgeExpiredRemovesLapsedOnceOnlyLeases(t *testing.T) {
	ctx := context.Background()
	clock := testclock.At(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s, _ := openTemp(t, postgres.WithClock(clock.Now))
	acquire := func(name string, ttl time.Duration) *runner.Lease {
		t.Helper()
		l, err := s.AcquireLease(ctx, name, "h", ttl, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	gone := []string{"replica/a", "replica/b_x", "cache-job/i-1"}
	var life *runner.Lease
	for _, name := range gone {
		life = acquire(name, 15*time.Second)
	}
	for _, name := range []string{"reconciler", "listener/7", "replica/"} {
		acquire(name, 15*time.Second)
	}
	acquire("cache-job/i-2", 2*time.Hour)
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
			t.Errorf("lease %s = %+v, %v; want it removed", name, l, err)
		}
	}
	for _, name := range []string{"reconciler", "listener/7", "replica/", "cache-job/i-2"} {
		if l, err := s.GetLease(ctx, name); err != nil || l.Version == 0 {
			t.Errorf("lease %s = %+v, %v; want it kept", name, l, err)
		}
	}
	if _, err := s.RenewLease(ctx, life, 15*time.Second, clock.Now()); !errors.Is(err, runner.ErrLeaseLost) {
		t.Errorf("renewing a removed lease: %v, want ErrLeaseLost", err)
	}
}
