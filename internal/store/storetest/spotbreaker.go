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

var spotBreakerTests = []contractTest{
	{"SpotBreaker/UnknownPoolIsZero", spotBreakerUnknownPoolIsZero},
	{"SpotBreaker/RoundTripAndCompareAndSet", spotBreakerRoundTripAndCompareAndSet},
	{"SpotBreaker/PoolsAreSeparate", spotBreakerPoolsAreSeparate},
	{"Race/OneSpotBreakerWinnerPerVersion", raceOneSpotBreakerWinnerPerVersion},
}

func spotBreakerUnknownPoolIsZero(t *testing.T, s store.Store) {
	b, err := s.GetSpotBreaker(context.Background(), "never-written")
	if err != nil {
		t.Fatalf("GetSpotBreaker: %v", err)
	}
	if b.Pool != "never-written" || b.Version != 0 || len(b.Recent) != 0 || !b.OpenUntil.IsZero() {
		t.Fatalf("breaker of a pool never written = %+v, want a zero record of that pool", b)
	}
}

func spotBreakerRoundTripAndCompareAndSet(t *testing.T, s store.Store) {
	ctx := context.Background()
	zone := time.FixedZone("UTC+1", 3600)
	at := time.Date(2031, time.May, 1, 10, 0, 0, 123_000_000, zone)
	first := &runner.SpotBreaker{
		Pool:      "spot-pool",
		Recent:    []runner.SpotInterruption{{Instance: "runfleet-spot-pool-1-1", At: at}, {Instance: "runfleet-spot-pool-2-1", At: at.Add(time.Minute)}},
		OpenUntil: at.Add(31 * time.Minute),
		UpdatedAt: at.Add(time.Minute),
	}
	if err := s.PutSpotBreaker(ctx, first); err != nil {
		t.Fatalf("first PutSpotBreaker: %v", err)
	}
	if first.Version != 1 {
		t.Fatalf("Version after the first write = %d, want 1", first.Version)
	}
	got, err := s.GetSpotBreaker(ctx, "spot-pool")
	if err != nil {
		t.Fatal(err)
	}
	requireSameBreaker(t, first, got)

	// A second creator (Version 0) and a stale writer both lose, and
	// change nothing.
	late := &runner.SpotBreaker{Pool: "spot-pool", UpdatedAt: at}
	if err := s.PutSpotBreaker(ctx, late); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second create: %v, want ErrConflict", err)
	}
	if late.Version != 0 {
		t.Fatalf("a refused write changed the caller's Version to %d", late.Version)
	}
	next := got.Clone()
	next.Recent = next.Recent[1:]
	if err := s.PutSpotBreaker(ctx, next); err != nil {
		t.Fatalf("compare-and-set on the version read: %v", err)
	}
	stale := got.Clone()
	stale.OpenUntil = time.Time{}
	requireConflict(t, s.PutSpotBreaker(ctx, stale), store.KindSpotBreaker, "spot-pool", "", 1)
	got, err = s.GetSpotBreaker(ctx, "spot-pool")
	if err != nil {
		t.Fatal(err)
	}
	requireSameBreaker(t, next, got)
}

func spotBreakerPoolsAreSeparate(t *testing.T, s store.Store) {
	ctx := context.Background()
	a := &runner.SpotBreaker{Pool: "a", OpenUntil: now().Add(time.Hour)}
	if err := s.PutSpotBreaker(ctx, a); err != nil {
		t.Fatal(err)
	}
	b, err := s.GetSpotBreaker(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if b.Version != 0 || !b.OpenUntil.IsZero() {
		t.Fatalf("pool b read pool a's breaker: %+v", b)
	}
}

// Workers counting interruptions of one pool at once, all from the same
// read (here: none stored yet), make one write; the others re-read.
func raceOneSpotBreakerWinnerPerVersion(t *testing.T, s store.Store) {
	ctx := context.Background()
	writes, winner := versionRace(t,
		func() (*runner.SpotBreaker, error) { return s.GetSpotBreaker(ctx, "spot-pool") },
		func(i int, read *runner.SpotBreaker) (*runner.SpotBreaker, error) {
			next := read.Clone()
			next.Recent = []runner.SpotInterruption{{Instance: fmt.Sprintf("racer-%d", i), At: now()}}
			return next, nil
		},
		func(next *runner.SpotBreaker) error { return s.PutSpotBreaker(ctx, next) },
		isConflict(store.KindSpotBreaker, "spot-pool", "", 0))
	got, err := s.GetSpotBreaker(ctx, "spot-pool")
	if err != nil {
		t.Fatal(err)
	}
	requireSameBreaker(t, writes[winner], got)
}

func requireSameBreaker(t *testing.T, want, got *runner.SpotBreaker) {
	t.Helper()
	if got.Pool != want.Pool || got.Version != want.Version || !got.OpenUntil.Equal(want.OpenUntil) ||
		!got.UpdatedAt.Equal(want.UpdatedAt) || len(got.Recent) != len(want.Recent) {
		t.Fatalf("breaker = %+v, want %+v", got, want)
	}
	for i := range want.Recent {
		if got.Recent[i].Instance != want.Recent[i].Instance || !got.Recent[i].At.Equal(want.Recent[i].At) {
			t.Fatalf("breaker interruption %d = %+v, want %+v", i, got.Recent[i], want.Recent[i])
		}
	}
}
