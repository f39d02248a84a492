package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// race is one contended write, the same for every record kind: racers
// writers, each prepared (its read and decision) before all of them write
// at once. Exactly one must win; every other must fail with an error lost
// accepts.
type race struct {
	prepare func(i int) error
	write   func(i int) error
	lost    func(err error) bool
}

// run starts the race and returns the winner's index.
func (r race) run(t *testing.T) int {
	t.Helper()
	errs := make([]error, racers)
	startTogether(racers, func(i int) {
		if r.prepare != nil {
			errs[i] = r.prepare(i)
		}
	}, func(i int) {
		if errs[i] == nil {
			errs[i] = r.write(i)
		}
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("racers %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !r.lost(err):
			t.Fatalf("racer %d lost with an unexpected error: %v", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no racer won")
	}
	return winner
}

// isConflict accepts the *store.ConflictError of a write that expected
// the record key at status from and version.
func isConflict[S ~string](kind store.Kind, key string, from S, version int64) func(error) bool {
	want := store.Expect(kind, key, from, version).Conflict()
	return func(err error) bool {
		var ce *store.ConflictError
		return errors.As(err, &ce) && errors.Is(err, store.ErrConflict) && *ce == *want
	}
}

// is accepts errors matching target.
func is(target error) func(error) bool {
	return func(err error) bool { return errors.Is(err, target) }
}

// versionRace is the race of every record kind's compare-and-set: each
// racer reads the record, makes its own next version of it (next), and all
// write at once; exactly one wins, the others lose as lost allows. It
// returns what each racer meant to write, and the winner.
func versionRace[R any](t *testing.T, read func() (*R, error), next func(i int, read *R) (*R, error), write func(*R) error, lost func(error) bool) ([]*R, int) {
	t.Helper()
	writes := make([]*R, racers)
	winner := race{
		prepare: func(i int) error {
			cur, err := read()
			if err == nil {
				writes[i], err = next(i, cur)
			}
			return err
		},
		write: func(i int) error { return write(writes[i]) },
		lost:  lost,
	}.run(t)
	return writes, winner
}

// toTargets is versionRace's next for kinds with a status: racer i moves
// the record it read to targets[i mod len(targets)] (runner's one
// transition check decides what is legal), and tag marks the write as its.
func toTargets[R interface{ Transition(S, time.Time) (R, error) }, S any](targets []S, tag func(next R, i int)) func(int, R) (R, error) {
	return func(i int, read R) (R, error) {
		next, err := read.Transition(targets[i%len(targets)], now())
		if err == nil {
			tag(next, i)
		}
		return next, err
	}
}

// Every racer reads version 1, then all compare-and-set at once, each to a
// different next state: exactly one wins and its write is what is stored.
func raceOneWinnerPerVersion(t *testing.T, s store.Store) {
	ctx := context.Background()
	inst := newInstance("p", 1)
	mustCreate(t, s, inst, roomy)

	targets := append([]runner.Status{runner.StatusPendingCreate}, runner.NextStatuses(runner.StatusPendingCreate)...)
	writes, winner := versionRace(t,
		func() (*runner.Instance, error) { return s.GetInstance(ctx, inst.Name) },
		toTargets(targets, func(next *runner.Instance, i int) { next.ProviderFault = fmt.Sprintf("racer %d", i) }),
		func(next *runner.Instance) error { return s.UpdateInstance(ctx, runner.StatusPendingCreate, next) },
		isConflict(store.KindInstance, inst.Name, runner.StatusPendingCreate, 1))
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
	race{
		write: func(int) error { return s.CreateInstance(ctx, admit(newInstance("p", 1), roomy)) },
		lost:  is(store.ErrAlreadyExists),
	}.run(t)
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

	race{
		write: func(int) error {
			next, err := deleting.Transition(runner.StatusDeleted, now())
			if err != nil {
				return err
			}
			return s.UpdateInstance(ctx, runner.StatusDeleting, next)
		},
		lost: is(store.ErrConflict),
	}.run(t)
	requireUsage(t, s, "p", 1)
}
