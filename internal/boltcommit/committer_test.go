package boltcommit

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"
	bbolterrors "go.etcd.io/bbolt/errors"
)

var bucket = []byte("b")

func openDB(t *testing.T) *bbolt.DB {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "test.db"), 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	err = db.Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucket(bucket)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func put(tx *bbolt.Tx, key string, value uint64) error {
	return tx.Bucket(bucket).Put([]byte(key), binary.BigEndian.AppendUint64(nil, value))
}

func get(tx *bbolt.Tx, key string) uint64 {
	v := tx.Bucket(bucket).Get([]byte(key))
	if v == nil {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func read(t *testing.T, db *bbolt.DB, key string) (value uint64, present bool) {
	t.Helper()
	err := db.View(func(tx *bbolt.Tx) error {
		present = tx.Bucket(bucket).Get([]byte(key)) != nil
		value = get(tx, key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return value, present
}

// gate holds a leader inside its function until the writers the test wants
// in one batch are all waiting behind it, so batches are deterministic.
type gate struct {
	c       *Committer
	entered chan struct{}
	open    chan struct{}
}

func newGate(c *Committer) *gate {
	return &gate{c: c, entered: make(chan struct{}), open: make(chan struct{})}
}

// hold is the held leader's function.
func (g *gate) hold(tx *bbolt.Tx) error {
	close(g.entered)
	<-g.open
	return put(tx, "gate", 1)
}

// start runs the held leader and returns its result channel once it leads.
func (g *gate) start() chan error {
	done := make(chan error, 1)
	go func() { done <- g.c.Update(g.hold) }()
	<-g.entered
	return done
}

// release lets the leader commit once n writers are waiting behind it.
func (g *gate) release(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.c.mu.Lock()
		waiting := len(g.c.pending)
		g.c.mu.Unlock()
		if waiting == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d writers waiting, want %d", waiting, n)
		}
		runtime.Gosched()
	}
	close(g.open)
}

// queueInOrder starts fns one at a time, each only once the previous one is
// waiting, so the batch behind the gate holds them in this order.
func queueInOrder(t *testing.T, c *Committer, fns ...func(*bbolt.Tx) error) []chan error {
	t.Helper()
	results := make([]chan error, len(fns))
	for i, fn := range fns {
		results[i] = make(chan error, 1)
		go func() { results[i] <- c.Update(fn) }()
		deadline := time.Now().Add(10 * time.Second)
		for {
			c.mu.Lock()
			waiting := len(c.pending)
			c.mu.Unlock()
			if waiting == i+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("writer %d never queued", i)
			}
			runtime.Gosched()
		}
	}
	return results
}

func TestLoneWriteCommitsAtOnce(t *testing.T) {
	db := openDB(t)
	c := New(db)
	if err := c.Update(func(tx *bbolt.Tx) error { return put(tx, "k", 7) }); err != nil {
		t.Fatal(err)
	}
	if v, ok := read(t, db, "k"); !ok || v != 7 {
		t.Fatalf("k = %d (present %v), want 7", v, ok)
	}
	if s := c.Stats(); s.Calls != 1 || s.Commits != 1 || s.Writes != 1 || s.Rollbacks != 0 {
		t.Fatalf("stats = %+v, want one call, one commit, one write", s)
	}
}

// Writers waiting behind a commit share the next one: two fsyncs for nine
// writes.
func TestWaitingWritersShareOneCommit(t *testing.T) {
	db := openDB(t)
	c := New(db)
	g := newGate(c)
	leader := g.start()
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := c.Update(func(tx *bbolt.Tx) error { return put(tx, fmt.Sprint(i), uint64(i)) }); err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
		})
	}
	g.release(t, n)
	wg.Wait()
	if err := <-leader; err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if v, ok := read(t, db, fmt.Sprint(i)); !ok || v != uint64(i) {
			t.Fatalf("key %d = %d (present %v)", i, v, ok)
		}
	}
	if s := c.Stats(); s.Commits != 2 || s.Writes != n+1 || s.Calls != n+1 {
		t.Fatalf("stats = %+v, want 2 commits carrying %d writes", s, n+1)
	}
}

// A function that fails is taken out: its writes are rolled back, it gets
// its own error, and the others commit as if it had never run.
func TestFailingFunctionDoesNotAffectOthers(t *testing.T) {
	db := openDB(t)
	c := New(db)
	g := newGate(c)
	leader := g.start()
	errRefused := errors.New("refused")
	runs := make([]int, 3)
	results := queueInOrder(t, c,
		func(tx *bbolt.Tx) error { runs[0]++; return put(tx, "a", get(tx, "n")+1) },
		func(tx *bbolt.Tx) error {
			runs[1]++
			if err := put(tx, "doomed", 1); err != nil {
				return err
			}
			return fmt.Errorf("after a write: %w", errRefused)
		},
		func(tx *bbolt.Tx) error { runs[2]++; return put(tx, "c", get(tx, "doomed")+10) },
	)
	g.release(t, 3)
	if err := <-leader; err != nil {
		t.Fatal(err)
	}
	for i, want := range []error{nil, errRefused, nil} {
		if err := <-results[i]; !errors.Is(err, want) || (want == nil && err != nil) {
			t.Fatalf("writer %d = %v, want %v", i, err, want)
		}
	}
	if _, ok := read(t, db, "doomed"); ok {
		t.Fatal("the failed function's write was committed")
	}
	if v, _ := read(t, db, "a"); v != 1 {
		t.Fatalf("a = %d, want 1", v)
	}
	if v, _ := read(t, db, "c"); v != 10 {
		t.Fatalf("c = %d, want 10: it must not see the failed function's write", v)
	}
	// The first ran twice (before and after the rollback), the failing one
	// once, the last only in the transaction that committed.
	if !slices.Equal(runs, []int{2, 1, 1}) {
		t.Fatalf("runs = %v, want [2 1 1]", runs)
	}
	if s := c.Stats(); s.Commits != 2 || s.Rollbacks != 1 || s.Writes != 3 {
		t.Fatalf("stats = %+v, want 2 commits, 1 rollback, 3 writes", s)
	}
}

// A failing function's error is judged against the writes of those before
// it, exactly as if they had committed first.
func TestFailureSeesEarlierWrites(t *testing.T) {
	db := openDB(t)
	c := New(db)
	g := newGate(c)
	leader := g.start()
	errTaken := errors.New("taken")
	claim := func(tx *bbolt.Tx) error {
		if get(tx, "owner") != 0 {
			return errTaken
		}
		return put(tx, "owner", 1)
	}
	results := queueInOrder(t, c, claim, claim, claim)
	g.release(t, 3)
	if err := <-leader; err != nil {
		t.Fatal(err)
	}
	for i, want := range []error{nil, errTaken, errTaken} {
		if err := <-results[i]; err != want {
			t.Fatalf("claim %d = %v, want %v", i, err, want)
		}
	}
}

func TestPanicFailsOnlyItsCaller(t *testing.T) {
	db := openDB(t)
	c := New(db)
	g := newGate(c)
	leader := g.start()
	results := make([]chan any, 3)
	fns := []func(*bbolt.Tx) error{
		func(tx *bbolt.Tx) error { return put(tx, "before", 1) },
		func(tx *bbolt.Tx) error {
			if err := put(tx, "panicked", 1); err != nil {
				return err
			}
			panic("boom")
		},
		func(tx *bbolt.Tx) error { return put(tx, "after", 1) },
	}
	for i, fn := range fns {
		results[i] = make(chan any, 1)
		go func() {
			defer func() { results[i] <- recover() }()
			if err := c.Update(fn); err != nil {
				panic(fmt.Sprintf("writer %d: %v", i, err))
			}
		}()
		for {
			c.mu.Lock()
			waiting := len(c.pending)
			c.mu.Unlock()
			if waiting == i+1 {
				break
			}
			runtime.Gosched()
		}
	}
	g.release(t, 3)
	if err := <-leader; err != nil {
		t.Fatal(err)
	}
	for i := range fns {
		got := <-results[i]
		if i != 1 {
			if got != nil {
				t.Fatalf("writer %d: %v", i, got)
			}
			continue
		}
		p, ok := got.(*PanicError)
		if !ok || p.Value != "boom" || len(p.Stack) == 0 {
			t.Fatalf("panicking writer's caller recovered %#v, want a *PanicError with the value and stack", got)
		}
	}
	for key, want := range map[string]bool{"before": true, "panicked": false, "after": true} {
		if _, ok := read(t, db, key); ok != want {
			t.Fatalf("%s present = %v, want %v", key, ok, want)
		}
	}
}

// A leader's own function panicking does not leave the writers behind it
// waiting forever.
func TestLeaderPanicStillHandsOver(t *testing.T) {
	db := openDB(t)
	c := New(db)
	func() {
		defer func() { _ = recover() }()
		_ = c.Update(func(*bbolt.Tx) error { panic("leader") })
	}()
	if err := c.Update(func(tx *bbolt.Tx) error { return put(tx, "k", 1) }); err != nil {
		t.Fatal(err)
	}
}

// runtime.Goexit (t.FailNow) inside a function ends the leading goroutine;
// the function's own caller gets an error and the rest are committed by the
// next leader.
func TestGoexitLosesNoOtherWriter(t *testing.T) {
	db := openDB(t)
	c := New(db)
	g := newGate(c)
	leader := g.start()
	leaderOfBatch := make(chan bool, 1)
	goexiter := make(chan error, 1)
	var results []chan error
	go func() {
		returned := false
		defer func() { leaderOfBatch <- !returned }()
		_ = c.Update(func(tx *bbolt.Tx) error { return put(tx, "lost-leader", 1) })
		returned = true
	}()
	for waiting := 0; waiting != 1; {
		c.mu.Lock()
		waiting = len(c.pending)
		c.mu.Unlock()
		runtime.Gosched()
	}
	go func() { goexiter <- c.Update(func(*bbolt.Tx) error { runtime.Goexit(); return nil }) }()
	for waiting := 0; waiting != 2; {
		c.mu.Lock()
		waiting = len(c.pending)
		c.mu.Unlock()
		runtime.Gosched()
	}
	results = append(results, make(chan error, 1))
	go func() { results[0] <- c.Update(func(tx *bbolt.Tx) error { return put(tx, "survivor", 1) }) }()
	g.release(t, 3)
	if err := <-leader; err != nil {
		t.Fatal(err)
	}
	// The batch's leader ran the Goexit and its goroutine ended with it.
	if ended := <-leaderOfBatch; !ended {
		t.Fatal("the leading goroutine's Update returned after a Goexit in the batch")
	}
	if err := <-goexiter; !errors.Is(err, errGoexit) {
		t.Fatalf("Goexit caller = %v, want errGoexit", err)
	}
	if err := <-results[0]; err != nil {
		t.Fatal(err)
	}
	if _, ok := read(t, db, "survivor"); !ok {
		t.Fatal("the writer after the Goexit was not committed")
	}
	if _, ok := read(t, db, "lost-leader"); ok {
		t.Fatal("the ended leader's write was committed although its caller was never told")
	}
	if err := c.Update(func(tx *bbolt.Tx) error { return put(tx, "later", 1) }); err != nil {
		t.Fatal(err)
	}
}

// Functions that all report Unchanged cost no commit; mixed with real writes
// they cost no rollback.
func TestUnchangedCostsNoCommit(t *testing.T) {
	db := openDB(t)
	c := New(db)
	errNothing := errors.New("nothing to do")
	noop := func(*bbolt.Tx) error { return Unchanged(errNothing) }
	if err := c.Update(noop); err != errNothing {
		t.Fatalf("Update = %v, want the function's own error", err)
	}
	if err := c.Update(func(*bbolt.Tx) error { return Unchanged(nil) }); err != nil {
		t.Fatalf("Update of an unchanged success = %v", err)
	}
	if s := c.Stats(); s.Commits != 0 {
		t.Fatalf("a no-op was committed: %+v", s)
	}

	g := newGate(c)
	leader := g.start()
	results := queueInOrder(t, c, noop, func(tx *bbolt.Tx) error { return put(tx, "k", 1) }, noop)
	g.release(t, 3)
	if err := <-leader; err != nil {
		t.Fatal(err)
	}
	for i, want := range []error{errNothing, nil, errNothing} {
		if err := <-results[i]; err != want {
			t.Fatalf("writer %d = %v, want %v", i, err, want)
		}
	}
	if s := c.Stats(); s.Commits != 2 || s.Rollbacks != 0 || s.Writes != 2 {
		t.Fatalf("stats = %+v, want 2 commits of one write each and no rollback", s)
	}
}

// A commit that cannot happen fails every function of the batch: none of
// them may be told its write is durable.
func TestClosedFileFailsEveryone(t *testing.T) {
	db := openDB(t)
	c := New(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Update(func(tx *bbolt.Tx) error { return put(tx, "k", 1) }); !errors.Is(err, bbolterrors.ErrDatabaseNotOpen) {
		t.Fatalf("Update on a closed file = %v, want ErrDatabaseNotOpen", err)
	}
}
