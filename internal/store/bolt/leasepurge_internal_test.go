package bolt

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testclock"
)

// A lapsed replica life's liveness lease and a machine's cache binding go
// an hour after they lapsed, in batches; a fixed-name lease and a lease
// still within its grace stay.
func TestPurgeExpiredRemovesLapsedOnceOnlyLeases(t *testing.T) {
	defer func(old int) { purgeBatchSize = old }(purgeBatchSize)
	purgeBatchSize = 2

	ctx := context.Background()
	clock := testclock.At(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := Open(filepath.Join(t.TempDir(), "runfleet.db"), WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	acquire := func(name string, ttl time.Duration) *runner.Lease {
		t.Helper()
		l, err := s.AcquireLease(ctx, name, "h", ttl, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	gone := []string{"replica/a", "replica/b", "replica/c", "cache-job/i-1", "cache-job/i-2"}
	var life *runner.Lease
	for _, name := range gone {
		life = acquire(name, 15*time.Second)
	}
	acquire("reconciler", 15*time.Second)
	acquire("listener/7", 15*time.Second)
	acquire("cache-job/i-3", 2*time.Hour) // lapses later
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
	for _, name := range []string{"reconciler", "listener/7", "cache-job/i-3"} {
		if l, err := s.GetLease(ctx, name); err != nil || l.Version == 0 {
			t.Errorf("lease %s = %+v, %v; want it kept", name, l, err)
		}
	}
	// A removed lease's holder cannot renew it: it reads as never written.
	if _, err := s.RenewLease(ctx, life, 15*time.Second, clock.Now()); !errors.Is(err, runner.ErrLeaseLost) {
		t.Errorf("renewing a removed lease: %v, want ErrLeaseLost", err)
	}
	if n, err := s.PurgeExpired(ctx); err != nil || n != 0 {
		t.Fatalf("second PurgeExpired = %d, %v; want 0", n, err)
	}
}
