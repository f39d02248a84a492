// Package boltcommit commits concurrent writes to one bbolt file together
// ("group commit"), so that N writers arriving at once cost one fsynced
// commit instead of N, without ever delaying a lone writer.
//
// A writer hands its function to Update. If no commit is in progress it
// becomes the leader: it runs every pending function, in arrival order, in
// one read-write transaction and commits once. Writers that arrive while that
// commit is on its way to the disk wait; when it is done, the first of them
// leads the next transaction with all of them in it. There is no timer: an
// idle file commits the first write at once.
//
// Each caller gets exactly the result it would get if the functions had run
// one after another, each in its own transaction, in arrival order:
//
//   - A function that returns an error (or panics) is taken out: the
//     transaction is rolled back and the others are run again, in the same
//     order, in a new one. Its error is what it would have seen after the
//     functions before it committed, because functions are deterministic.
//     A function that refuses before writing anything can say so (Unchanged)
//     and spare the others that re-run.
//   - Nobody is told "done" before the commit carrying its writes is on disk.
//     If that commit fails, every function of the batch gets its error.
//
// That is why a function given to Update must be deterministic given the
// transaction: it may run more than once, and it must read only the
// transaction and values fixed before Update was called (take time.Now()
// before, not inside), assign rather than accumulate whatever it reports to
// its caller, and do nothing outside the transaction (no channel sends, no
// changes to shared Go state). Effects belong after Update returns. A
// function must not call Update itself (it would wait for its own batch),
// and one that calls runtime.Goexit ends whichever caller's goroutine is
// leading (the other callers are not lost, but that one is).
package boltcommit

import (
	"sync"

	bbolt "go.etcd.io/bbolt"
)

// Unchanged marks the result of a function that has written nothing to the
// transaction, typically because a check found nothing to do or refused the
// write: return Unchanged(err) itself, not wrapped. Update hands err (nil
// included) to the caller as usual, but the batch goes on without a
// rollback, and a batch in which nothing was written is not committed at
// all, so refusals and no-ops cost neither a re-run of the others nor an
// fsync.
//
// Marking a function that did write would commit that write behind its
// caller's back: use it only before the first Put, Delete or NextSequence.
func Unchanged(err error) error {
	return &unchanged{err: err}
}

type unchanged struct{ err error }

func (u *unchanged) Error() string {
	if u.err == nil {
		return "boltcommit: unchanged"
	}
	return u.err.Error()
}

func (u *unchanged) Unwrap() error { return u.err }

// maxBatch bounds the functions committed together, which bounds the work a
// failing function makes the others repeat.
const maxBatch = 256

// Committer serialises the writes of one bbolt file into group commits. All
// writes to the file must go through it (or the file's own db.Update, which
// simply waits its turn). It is safe for concurrent use.
type Committer struct {
	db       *bbolt.DB
	onCommit func(tx *bbolt.Tx) func()

	mu      sync.Mutex
	pending []*call
	leading bool

	stats counters
}

// Option tunes New.
type Option func(*Committer)

// OnCommit registers hook to run in every transaction that is about to be
// committed, after all its functions, so it sees the final state. The
// function hook returns (if not nil) runs once that commit is durable,
// before any of its callers is released and before the next batch begins:
// hooks therefore observe commits one at a time, in commit order. hook must
// not write to tx nor call the Committer.
func OnCommit(hook func(tx *bbolt.Tx) func()) Option {
	return func(c *Committer) { c.onCommit = hook }
}

// New returns a Committer for db. It does not own db: closing db is the
// caller's business, after which Update returns bbolt's ErrDatabaseNotOpen.
func New(db *bbolt.DB, opts ...Option) *Committer {
	c := &Committer{db: db}
	for _, opt := range opts {
		opt(c)
	}
	return c
}

// call is one Update waiting for its result.
type call struct {
	fn  func(*bbolt.Tx) error
	err error
	// wrote is false if fn marked its result Unchanged.
	wrote bool
	// wake tells the waiting caller either that its result is ready (false)
	// or that it must lead the next batch (true). Buffered, so whoever
	// signals never blocks.
	wake chan bool
}

// Update runs fn in a read-write transaction, possibly shared with other
// callers' functions, and returns once the transaction is durably committed
// (or fn's error, or the commit's). See the package comment for what fn may
// do. If fn panics, Update panics in the caller's goroutine with a
// *PanicError, and the other functions of the batch are unaffected.
func (c *Committer) Update(fn func(*bbolt.Tx) error) error {
	c.stats.calls.Add(1)
	self := &call{fn: fn, wake: make(chan bool, 1)}
	c.mu.Lock()
	c.pending = append(c.pending, self)
	lead := !c.leading
	c.leading = true
	c.mu.Unlock()

	if !lead {
		lead = <-self.wake
	}
	if lead {
		c.lead(self)
	}
	if p, ok := self.err.(*PanicError); ok && p.owner == self {
		panic(p)
	}
	return self.err
}

// lead commits one batch, which holds self (the leader is always first in
// line), then passes leadership to the first writer that arrived meanwhile,
// so that no caller waits for more than the commit it is in.
func (c *Committer) lead(self *call) {
	c.mu.Lock()
	n := min(len(c.pending), maxBatch)
	calls := c.pending[:n:n]
	c.pending = append([]*call(nil), c.pending[n:]...)
	c.mu.Unlock()

	b := &batch{c: c, calls: calls}
	defer b.release(self)
	b.run()
}
