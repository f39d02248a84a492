package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// Goroutine counts stay small: enough to interleave on any backend, few
// enough to run quickly against DynamoDB Local.
const (
	racers       = 16
	burstCreates = 32
	burstLimit   = 8
	burstDeletes = 3
)

var raceTests = []contractTest{
	{"Race/OneWinnerPerVersion", raceOneWinnerPerVersion},
	{"Race/SameNameCreatedOnce", raceSameNameCreatedOnce},
	{"Race/BurstNeverExceedsMaxRunners", raceBurstNeverExceedsMaxRunners},
	{"Race/ConcurrentDeleteReleasesOnce", raceConcurrentDeleteReleasesOnce},
}

// startTogether runs n functions so that they all begin at once, and waits
// for every one of them.
func startTogether(n int, prepare func(i int), run func(i int)) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			prepare(i)
			ready.Done()
			<-start
			run(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
}

// Every racer reads version 1, then all compare-and-set at once, each to a
// different next state: exactly one wins and its write is what is stored.
func raceOneWinnerPerVersion(t *testing.T, s store.Store) {
	ctx := context.Background()
	inst := newInstance("p", 1)
	mustCreate(t, s, inst, roomy)

	targets := append([]runner.Status{runner.StatusPendingCreate}, runner.NextStatuses(runner.StatusPendingCreate)...)
	writes := make([]*runner.Instance, racers)
	errs := make([]error, racers)
	startTogether(racers, func(i int) {
		read, err := s.GetInstance(ctx, inst.Name)
		if err != nil {
			errs[i] = err
			return
		}
		next, err := read.Transition(targets[i%len(targets)], now())
		if err != nil {
			errs[i] = err
			return
		}
		next.ProviderFault = fmt.Sprintf("racer %d", i)
		writes[i] = next
	}, func(i int) {
		if writes[i] != nil {
			errs[i] = s.UpdateInstance(ctx, runner.StatusPendingCreate, writes[i])
		}
	})

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("racers %d and %d both won", winner, i)
		case err == nil:
			winner = i
		default:
			requireConflict(t, err, inst.Name, runner.StatusPendingCreate, 1)
		}
	}
	if winner < 0 {
		t.Fatal("no racer won")
	}
	got := mustGet(t, s, inst.Name)
	if got.Version != 2 {
		t.Fatalf("final Version = %d, want 2", got.Version)
	}
	requireSameInstance(t, writes[winner], got)
	requireUsage(t, s, "p", 1)
}

// The same queued job arriving many times at once makes one instance.
func raceSameNameCreatedOnce(t *testing.T, s store.Store) {
	ctx := context.Background()
	errs := make([]error, racers)
	startTogether(racers, func(int) {}, func(i int) {
		errs[i] = s.CreateInstance(ctx, admit(newInstance("p", 1), roomy))
	})
	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, store.ErrAlreadyExists):
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if created != 1 {
		t.Fatalf("%d creates of one name succeeded, want 1", created)
	}
	requireUsage(t, s, "p", 1)
}

// P4: a burst of distinct jobs against max_runners=N never holds more than N,
// seen from the results, from PoolUsage and from the live list, during and
// after; then deleting K frees exactly K slots.
func raceBurstNeverExceedsMaxRunners(t *testing.T, s store.Store) {
	ctx := context.Background()
	const pool = "burst"

	var overfull atomic.Value
	stopWatching := make(chan struct{})
	watched := make(chan struct{})
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() { close(stopWatching) })
		<-watched
	}
	defer stop() // also when a check below fails first
	go func() {
		defer close(watched)
		for {
			select {
			case <-stopWatching:
				return
			default:
			}
			if n, err := s.PoolUsage(ctx, pool); err == nil && n > burstLimit {
				overfull.Store(fmt.Sprintf("PoolUsage = %d", n))
			}
			if l, err := s.ListInstancesByPool(ctx, pool); err == nil && len(l) > burstLimit {
				overfull.Store(fmt.Sprintf("ListInstancesByPool has %d", len(l)))
			}
		}
	}()

	burst := func(firstJob int64) (created []string) {
		errs := make([]error, burstCreates)
		insts := make([]*runner.Instance, burstCreates)
		startTogether(burstCreates, func(i int) {
			insts[i] = newInstance(pool, firstJob+int64(i))
		}, func(i int) {
			errs[i] = s.CreateInstance(ctx, admit(insts[i], burstLimit))
		})
		for i, err := range errs {
			switch {
			case err == nil:
				created = append(created, insts[i].Name)
			case !errors.Is(err, store.ErrPoolFull):
				t.Fatalf("create %s: %v", insts[i].Name, err)
			}
		}
		return created
	}

	created := burst(1000)
	if len(created) != burstLimit {
		t.Fatalf("%d of %d creates succeeded against max_runners=%d", len(created), burstCreates, burstLimit)
	}
	requireUsage(t, s, pool, burstLimit)

	for _, name := range created[:burstDeletes] {
		mustMove(t, s, name, pathToDeleted...)
	}
	requireUsage(t, s, pool, burstLimit-burstDeletes)

	again := burst(2000)
	if len(again) != burstDeletes {
		t.Fatalf("after deleting %d, %d creates succeeded", burstDeletes, len(again))
	}
	requireUsage(t, s, pool, burstLimit)

	stop()
	if v := overfull.Load(); v != nil {
		t.Fatalf("pool held more than max_runners=%d during the burst: %v", burstLimit, v)
	}
	live, err := s.ListInstancesByPool(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	requireNames(t, "ListInstancesByPool", live, append(created[burstDeletes:], again...)...)
}

// Many writers finishing the same delete at once release its slot once.
func raceConcurrentDeleteReleasesOnce(t *testing.T, s store.Store) {
	ctx := context.Background()
	keep, victim := newInstance("p", 1), newInstance("p", 2)
	mustCreate(t, s, keep, roomy)
	mustCreate(t, s, victim, roomy)
	deleting := mustMove(t, s, victim.Name, runner.StatusPendingDelete, runner.StatusDeleting)

	errs := make([]error, racers)
	startTogether(racers, func(int) {}, func(i int) {
		next, err := deleting.Transition(runner.StatusDeleted, now())
		if err == nil {
			err = s.UpdateInstance(ctx, runner.StatusDeleting, next)
		}
		errs[i] = err
	})
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d writers moved the instance to deleted, want 1", won)
	}
	requireUsage(t, s, "p", 1)
}
