// Package local is the durable work queue of embedded mode: buckets in a
// bbolt file, its own (Open) or the store's (OpenInDB, as `runfleet serve`
// runs it), with delays, visibility timeouts and dead-lettering, and no
// polling.
//
// A Receive with nothing to deliver parks on a waiter list. Send hands a new
// message straight to the first waiter, once it is on disk. A message that
// becomes visible while someone waits (sent just as the waiter parked,
// delayed, or back from an expired visibility timeout) wakes the first
// waiter, which takes it itself; a timer armed for the earliest due time
// covers what becomes visible with time, and only while someone waits.
//
// Writes go through a group commit (package boltcommit): concurrent Sends,
// Receives and Acks share one transaction and one fsync, and no lock is held
// while a commit reaches the disk.
package local

import (
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/runfleet/runfleet/internal/boltcommit"
	"github.com/runfleet/runfleet/internal/queue"
)

// Options configure a queue.
type Options struct {
	// MaxReceives dead-letters a message on the first receive attempt after it
	// was delivered MaxReceives times. 0 never dead-letters.
	MaxReceives int
	// DefaultVisibility applies when ReceiveOptions.Visibility is 0.
	// Default 30 s, as SQS.
	DefaultVisibility time.Duration
	// OpenTimeout bounds how long Open waits for another process holding the
	// file. Default 1 s.
	OpenTimeout time.Duration
	// Now is the clock of every due-time and visibility decision (default
	// time.Now), so a simulation can run the queue on virtual time. Blocking
	// in Receive (ReceiveOptions.Wait) is real time whatever the clock: a
	// receiver on a clock that jumps should poll with Wait 0.
	Now func() time.Time
}

const (
	defaultVisibility  = 30 * time.Second
	defaultOpenTimeout = time.Second
	// maxBatch matches SQS so code written against one fits the other.
	maxBatch = 10
)

// ErrInvalidReceipt is matched (errors.Is) by Ack's error for a receipt this
// queue never issued.
var ErrInvalidReceipt = errors.New("local queue: invalid receipt")

// Queue is a durable queue.Queue and queue.DeadLetterer over one bbolt file.
// It is safe for concurrent use; the file is locked to one process.
type Queue struct {
	db      *bolt.DB
	commits *boltcommit.Committer
	opts    Options
	names   bucketNames
	// ownsDB is false for a queue kept in someone else's file (OpenInDB).
	ownsDB bool

	// mu guards the waiter list, the due-time mirror and the timer. It is
	// never held across a commit: what keeps a waiter from missing a message
	// is that the mirror is refreshed, and the waiters looked at, after every
	// commit (onCommit), under mu, in commit order.
	mu      sync.Mutex
	closed  bool
	closing chan struct{}
	waiters []*waiter
	// nextDue is the first key of the due index as of the last commit, so
	// Receive knows without a transaction whether anything is visible.
	nextDue    time.Time
	hasNextDue bool
	timer      *time.Timer
}

var (
	_ queue.Queue        = (*Queue)(nil)
	_ queue.DeadLetterer = (*Queue)(nil)
)

// Open opens (creating if needed) the queue file at path. Messages delivered
// but not acknowledged before the previous Close, or crash, are visible again
// at once: their receivers were in the process that ended.
func Open(path string, opts Options) (*Queue, error) {
	if err := checkOptions(&opts); err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.OpenTimeout})
	if err != nil {
		return nil, fmt.Errorf("local queue: open %s: %w", path, err)
	}
	q, err := start(db, ownFileBuckets, opts)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("local queue: open %s: %w", path, err)
	}
	q.ownsDB = true
	return q, nil
}

// OpenInDB keeps the queue in db, an open bbolt file that holds other data
// too, under bucket names of its own ("queue.*"). Sharing the file is what
// lets another writer add a message in the same commit as its own writes
// (SendInTx); for that, every write to db must go through Committer, whose
// commits tell the queue's waiters about new messages. Close leaves db open:
// it belongs to the caller, who closes it after the queue. Unacknowledged
// messages are released as by Open.
func OpenInDB(db *bolt.DB, opts Options) (*Queue, error) {
	if err := checkOptions(&opts); err != nil {
		return nil, err
	}
	q, err := start(db, sharedFileBuckets, opts)
	if err != nil {
		return nil, fmt.Errorf("local queue: open in %s: %w", db.Path(), err)
	}
	return q, nil
}

func checkOptions(opts *Options) error {
	if opts.MaxReceives < 0 {
		return fmt.Errorf("local queue: MaxReceives %d is negative", opts.MaxReceives)
	}
	if opts.DefaultVisibility <= 0 {
		opts.DefaultVisibility = defaultVisibility
	}
	if opts.OpenTimeout <= 0 {
		opts.OpenTimeout = defaultOpenTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return nil
}

// start prepares the queue's buckets in db and the queue that uses them.
func start(db *bolt.DB, names bucketNames, opts Options) (*Queue, error) {
	q := &Queue{db: db, names: names, opts: opts, closing: make(chan struct{})}
	err := db.Update(func(tx *bolt.Tx) error {
		if err := q.names.create(tx); err != nil {
			return err
		}
		b := q.names.open(tx)
		if err := b.releaseInFlight(q.opts.Now()); err != nil {
			return err
		}
		q.nextDue, q.hasNextDue = b.nextDue()
		return nil
	})
	if err != nil {
		return nil, err
	}
	q.commits = boltcommit.New(db, boltcommit.OnCommit(q.onCommit))
	q.timer = time.AfterFunc(time.Hour, q.onTimer)
	q.timer.Stop()
	return q, nil
}

// Now reads the queue's clock (Options.Now), so a writer that adds
// messages inside its own transactions (SendInTx) dates them on the same
// clock as the queue decides visibility by.
func (q *Queue) Now() time.Time {
	return q.opts.Now()
}

// Committer is the group commit of the queue's file. With OpenInDB, the
// file's other writers must use it too: only its commits wake receivers.
func (q *Queue) Committer() *boltcommit.Committer {
	return q.commits
}

// Close releases the file (unless it came from OpenInDB). Blocked Receives
// return queue.ErrClosed.
func (q *Queue) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	close(q.closing)
	q.timer.Stop()
	q.mu.Unlock()
	if !q.ownsDB {
		return nil
	}
	// bbolt waits for a commit in progress; later ones fail as closed.
	if err := q.db.Close(); err != nil {
		return fmt.Errorf("local queue: close: %w", err)
	}
	return nil
}

// CommitStats counts the queue's write calls and the fsynced commits they
// cost, for benchmarks and tests.
func (q *Queue) CommitStats() boltcommit.Stats {
	return q.commits.Stats()
}

// write runs fn through the group commit and returns once its transaction
// is durable. fn must follow boltcommit's rules: it may run more than once,
// so it depends only on the buckets and values fixed before the call, and
// has no effect outside the transaction.
func (q *Queue) write(fn func(buckets) error) error {
	err := q.commits.Update(func(tx *bolt.Tx) error { return fn(q.names.open(tx)) })
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return queue.ErrClosed
	}
	return err
}

// onCommit reads the next due time from each transaction about to commit
// and, once it is durable, mirrors it and settles the waiters, before any
// of the transaction's callers returns.
func (q *Queue) onCommit(tx *bolt.Tx) func() {
	next, has := q.names.open(tx).nextDue()
	return func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		q.nextDue, q.hasNextDue = next, has
		q.settleLocked()
	}
}
