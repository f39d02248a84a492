package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

var leaseTests = []contractTest{
	{"Lease/FreeIsAcquiredAndRead", leaseFreeIsAcquiredAndRead},
	{"Lease/HeldIsRefused", leaseHeldIsRefused},
	{"Lease/HolderRenewsAndReacquires", leaseHolderRenewsAndReacquires},
	{"Lease/ExpiryHandsOver", leaseExpiryHandsOver},
	{"Lease/StaleRenewFails", leaseStaleRenewFails},
	{"Lease/ReleaseFrees", leaseReleaseFrees},
	{"Lease/ReleaseByNonHolderChangesNothing", leaseReleaseByNonHolderChangesNothing},
	{"Lease/NamesAreSeparate", leaseNamesAreSeparate},
	{"Race/OneLeaseHolderAmongMany", raceOneLeaseHolderAmongMany},
	{"Race/StaleRenewAgainstAcquirers", raceStaleRenewAgainstAcquirers},
}

// The lease tests' clock is a fake one: the store judges expiry only by
// the now its callers pass, so t0 plus durations stands in for time
// passing, and nothing waits.
const leaseTTL = 30 * time.Second

func leaseClock() time.Time { return time.Date(2031, time.March, 1, 12, 0, 0, 0, time.UTC) }

func mustAcquire(t *testing.T, s store.Store, name, holder string, at time.Time) *runner.Lease {
	t.Helper()
	l, err := s.AcquireLease(context.Background(), name, holder, leaseTTL, at)
	if err != nil {
		t.Fatalf("AcquireLease(%s, %s): %v", name, holder, err)
	}
	if l.Name != name || l.Holder != holder || !l.ExpiresAt.Equal(at.Add(leaseTTL)) {
		t.Fatalf("AcquireLease(%s, %s) = %+v, want it held until %s", name, holder, l, at.Add(leaseTTL))
	}
	return l
}

// requireLease checks the stored lease is want (holder, expiry, version).
func requireLease(t *testing.T, s store.Store, want *runner.Lease) {
	t.Helper()
	got, err := s.GetLease(context.Background(), want.Name)
	if err != nil {
		t.Fatalf("GetLease(%s): %v", want.Name, err)
	}
	if got.Name != want.Name || got.Holder != want.Holder || !got.ExpiresAt.Equal(want.ExpiresAt) || got.Version != want.Version {
		t.Fatalf("stored lease = %+v, want %+v", got, want)
	}
}

// requireAs checks err is an E that matches sentinel and that ok accepts.
func requireAs[E error](t *testing.T, err, sentinel error, ok func(E) bool) {
	t.Helper()
	var e E
	if !errors.As(err, &e) || !errors.Is(err, sentinel) || !ok(e) {
		t.Fatalf("got %v, want a %T matching %v", err, e, sentinel)
	}
}

func requireLeaseError(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got %v, want an error matching %v", err, target)
	}
}

func leaseFreeIsAcquiredAndRead(t *testing.T, s store.Store) {
	t0 := leaseClock()
	requireLease(t, s, &runner.Lease{Name: "reconciler"})
	l := mustAcquire(t, s, "reconciler", "replica-a", t0)
	if l.Version != 1 {
		t.Fatalf("first acquire: Version %d, want 1", l.Version)
	}
	requireLease(t, s, l)
}

func leaseHeldIsRefused(t *testing.T, s store.Store) {
	t0 := leaseClock()
	a := mustAcquire(t, s, "reconciler", "replica-a", t0)
	_, err := s.AcquireLease(context.Background(), "reconciler", "replica-b", leaseTTL, t0.Add(leaseTTL-time.Millisecond))
	requireAs(t, err, runner.ErrLeaseHeld, func(e *runner.LeaseHeldError) bool {
		return e.Name == "reconciler" && e.Holder == "replica-a" && e.ExpiresAt.Equal(a.ExpiresAt)
	})
	requireLease(t, s, a)
}

// A renew by the holder extends the lease and moves its version; acquiring
// again as the same holder does too.
func leaseHolderRenewsAndReacquires(t *testing.T, s store.Store) {
	ctx := context.Background()
	t0 := leaseClock()
	a := mustAcquire(t, s, "listener/linux", "replica-a", t0)
	renewed, err := s.RenewLease(ctx, a, leaseTTL, t0.Add(leaseTTL/2))
	if err != nil {
		t.Fatalf("renew by the holder: %v", err)
	}
	if renewed.Holder != "replica-a" || renewed.Version != a.Version+1 || !renewed.ExpiresAt.Equal(t0.Add(leaseTTL/2+leaseTTL)) {
		t.Fatalf("renewed = %+v, want replica-a's at version %d until %s", renewed, a.Version+1, t0.Add(leaseTTL/2+leaseTTL))
	}
	requireLease(t, s, renewed)
	// Past the first expiry, before the renewed one: still held.
	_, err = s.AcquireLease(ctx, "listener/linux", "replica-b", leaseTTL, t0.Add(leaseTTL))
	requireLeaseError(t, err, runner.ErrLeaseHeld)

	again := mustAcquire(t, s, "listener/linux", "replica-a", t0.Add(leaseTTL))
	if again.Version != renewed.Version+1 {
		t.Fatalf("re-acquire by the holder: Version %d, want %d", again.Version, renewed.Version+1)
	}
	requireLease(t, s, again)
}

// Once the ttl has passed by the caller's clock another holder acquires,
// and the first one's renew and release no longer touch it.
func leaseExpiryHandsOver(t *testing.T, s store.Store) {
	ctx := context.Background()
	t0 := leaseClock()
	a := mustAcquire(t, s, "reconciler", "replica-a", t0)
	b := mustAcquire(t, s, "reconciler", "replica-b", t0.Add(leaseTTL))
	if b.Version != a.Version+1 {
		t.Fatalf("hand-over: Version %d, want %d", b.Version, a.Version+1)
	}
	_, err := s.RenewLease(ctx, a, leaseTTL, t0.Add(leaseTTL))
	requireLeaseError(t, err, runner.ErrLeaseLost)
	if err := s.ReleaseLease(ctx, a); err != nil {
		t.Fatalf("release of a lost lease: %v, want nil", err)
	}
	requireLease(t, s, b)
}

// A holder whose lease was taken and given back (the version moved)
// cannot renew, even though the holder's name is stored again.
func leaseStaleRenewFails(t *testing.T, s store.Store) {
	ctx := context.Background()
	t0 := leaseClock()
	a := mustAcquire(t, s, "budget/app-1", "replica-a", t0)
	renewed, err := s.RenewLease(ctx, a, leaseTTL, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.RenewLease(ctx, a, leaseTTL, t0.Add(2*time.Second))
	requireAs(t, err, runner.ErrLeaseLost, func(e *runner.LeaseLostError) bool {
		return *e == runner.LeaseLostError{Name: "budget/app-1", Holder: "replica-a", Version: a.Version}
	})
	requireLease(t, s, renewed)
}

func leaseReleaseFrees(t *testing.T, s store.Store) {
	ctx := context.Background()
	t0 := leaseClock()
	a := mustAcquire(t, s, "reconciler", "replica-a", t0)
	if err := s.ReleaseLease(ctx, a); err != nil {
		t.Fatalf("release by the holder: %v", err)
	}
	requireLease(t, s, &runner.Lease{Name: "reconciler", Version: a.Version + 1})
	_, err := s.RenewLease(ctx, a, leaseTTL, t0)
	requireLeaseError(t, err, runner.ErrLeaseLost)
	// Free at once, long before the released holding would have expired.
	b := mustAcquire(t, s, "reconciler", "replica-b", t0.Add(time.Second))
	if b.Version != a.Version+2 {
		t.Fatalf("acquire after release: Version %d, want %d", b.Version, a.Version+2)
	}
}

func leaseReleaseByNonHolderChangesNothing(t *testing.T, s store.Store) {
	ctx := context.Background()
	t0 := leaseClock()
	a := mustAcquire(t, s, "reconciler", "replica-a", t0)
	for _, other := range []*runner.Lease{
		{Name: "reconciler", Holder: "replica-b", Version: a.Version},
		{Name: "reconciler", Holder: "replica-a", Version: a.Version - 1},
		{Name: "reconciler", Version: a.Version},
	} {
		if err := s.ReleaseLease(ctx, other); err != nil {
			t.Fatalf("release of %+v: %v, want nil", other, err)
		}
		requireLease(t, s, a)
	}
}

func leaseNamesAreSeparate(t *testing.T, s store.Store) {
	t0 := leaseClock()
	mustAcquire(t, s, "listener/linux", "replica-a", t0)
	mustAcquire(t, s, "listener/windows", "replica-b", t0)
	requireLease(t, s, &runner.Lease{Name: "listener/macos"})
}

// Two holders never both hold: of many acquiring a free lease at once
// exactly one wins, and again once it has expired.
func raceOneLeaseHolderAmongMany(t *testing.T, s store.Store) {
	ctx := context.Background()
	t0 := leaseClock()
	for round, at := range []time.Time{t0, t0.Add(leaseTTL)} {
		won := make([]*runner.Lease, racers)
		winner := race{
			write: func(i int) (err error) {
				won[i], err = s.AcquireLease(ctx, "reconciler", fmt.Sprintf("round-%d-replica-%d", round, i), leaseTTL, at)
				return err
			},
			lost: is(runner.ErrLeaseHeld),
		}.run(t)
		requireLease(t, s, won[winner])
	}
}

// A holder renewing a lease that has just expired races others acquiring
// it: one of them holds it afterwards, never two.
func raceStaleRenewAgainstAcquirers(t *testing.T, s store.Store) {
	ctx := context.Background()
	t0 := leaseClock()
	a := mustAcquire(t, s, "reconciler", "replica-0", t0)
	at := t0.Add(leaseTTL)
	won := make([]*runner.Lease, racers)
	winner := race{
		write: func(i int) (err error) {
			if i == 0 {
				won[i], err = s.RenewLease(ctx, a, leaseTTL, at)
			} else {
				won[i], err = s.AcquireLease(ctx, "reconciler", fmt.Sprintf("replica-%d", i), leaseTTL, at)
			}
			return err
		},
		lost: func(err error) bool {
			return errors.Is(err, runner.ErrLeaseHeld) || errors.Is(err, runner.ErrLeaseLost)
		},
	}.run(t)
	requireLease(t, s, won[winner])
}
