package boltcommit

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	bbolt "go.etcd.io/bbolt"
)

// OnCommit's hook sees the final state of each committed transaction, and
// what it returns runs before the callers are released.
func TestOnCommitSeesEachCommitInOrder(t *testing.T) {
	db := openDB(t)
	var (
		mu   sync.Mutex
		seen []uint64
	)
	c := New(db, OnCommit(func(tx *bbolt.Tx) func() {
		n := get(tx, "n")
		return func() {
			mu.Lock()
			seen = append(seen, n)
			mu.Unlock()
		}
	}))
	const writers = 50
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			var after uint64
			if err := c.Update(func(tx *bbolt.Tx) error {
				after = get(tx, "n") + 1
				return put(tx, "n", after)
			}); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) == 0 || seen[len(seen)-1] < after {
				t.Errorf("Update returned before the hook saw its commit (n=%d, hook saw %v)", after, seen)
			}
		})
	}
	wg.Wait()
	if !slices.IsSorted(seen) || seen[len(seen)-1] != writers {
		t.Fatalf("hook saw %v: want increasing values ending at %d", seen, writers)
	}
	if s := c.Stats(); uint64(len(seen)) != s.Commits {
		t.Fatalf("hook ran %d times for %d commits", len(seen), s.Commits)
	}
}

// Many writers racing for a limited resource get exactly the outcomes some
// serial order would give them: every success saw the state the successes
// before it left, every refusal saw a committed state that refused it, and
// the file holds the sum of the successes.
func TestConcurrentWritersMatchSerialExecution(t *testing.T) {
	db := openDB(t)
	c := New(db)
	const (
		writers = 64
		limit   = 300
	)
	errFull := errors.New("full")
	type outcome struct {
		saw, add uint64
		err      error
	}
	outcomes := make([]outcome, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			add := uint64(i%13 + 1)
			var saw uint64
			err := c.Update(func(tx *bbolt.Tx) error {
				saw = get(tx, "total")
				if saw+add > limit {
					return errFull
				}
				if err := put(tx, fmt.Sprintf("w%02d", i), add); err != nil {
					return err
				}
				return put(tx, "total", saw+add)
			})
			outcomes[i] = outcome{saw: saw, add: add, err: err}
		})
	}
	wg.Wait()

	var successes []outcome
	for i, o := range outcomes {
		switch {
		case o.err == nil:
			successes = append(successes, o)
		case o.err != errFull:
			t.Fatalf("writer %d: %v", i, o.err)
		}
		_, stored := read(t, db, fmt.Sprintf("w%02d", i))
		if stored != (o.err == nil) {
			t.Fatalf("writer %d: result %v but its key stored = %v", i, o.err, stored)
		}
	}
	slices.SortFunc(successes, func(a, b outcome) int { return int(a.saw) - int(b.saw) })
	states := map[uint64]bool{0: true}
	var total uint64
	for _, o := range successes {
		if o.saw != total {
			t.Fatalf("a success saw total %d where the successes before it leave %d", o.saw, total)
		}
		total += o.add
		states[total] = true
	}
	for i, o := range outcomes {
		if o.err != nil && (!states[o.saw] || o.saw+o.add <= limit) {
			t.Fatalf("writer %d was refused at total %d (+%d): not a committed state that refuses it", i, o.saw, o.add)
		}
	}
	if got, _ := read(t, db, "total"); got != total {
		t.Fatalf("stored total %d, successes add up to %d", got, total)
	}
	s := c.Stats()
	t.Logf("%d writers, %d successes: %+v", writers, len(successes), s)
	if s.Writes != uint64(len(successes)) || s.Calls != writers {
		t.Fatalf("stats %+v disagree with %d successes of %d calls", s, len(successes), writers)
	}
}
