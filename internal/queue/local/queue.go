// Package local is the durable work queue of embedded mode: a bbolt file of
// its own, with delays, visibility timeouts and dead-lettering, and no polling.
//
// A Receive with nothing to deliver parks on a waiter list. Send hands a new
// message straight to the first waiter; messages that become visible later
// (delays, expired visibility timeouts) are handed over by one timer armed
// for the earliest due time, and only while someone waits.
package local

import (
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

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
	db   *bolt.DB
	opts Options

	// mu serialises every write transaction with the waiter list and the
	// timer, so a waiter can never miss a message sent while it registers.
	mu      sync.Mutex
	closed  bool
	closing chan struct{}
	waiters []*waiter
	// nextDue mirrors the first key of the due index after every write, so
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
	if opts.MaxReceives < 0 {
		return nil, fmt.Errorf("local queue: MaxReceives %d is negative", opts.MaxReceives)
	}
	if opts.DefaultVisibility <= 0 {
		opts.DefaultVisibility = defaultVisibility
	}
	if opts.OpenTimeout <= 0 {
		opts.OpenTimeout = defaultOpenTimeout
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.OpenTimeout})
	if err != nil {
		return nil, fmt.Errorf("local queue: open %s: %w", path, err)
	}
	q := &Queue{db: db, opts: opts, closing: make(chan struct{})}
	q.timer = time.AfterFunc(time.Hour, q.onTimer)
	q.timer.Stop()

	err = q.write(func(b buckets) error { return b.releaseInFlight(time.Now()) }, createBuckets)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("local queue: open %s: %w", path, err)
	}
	return q, nil
}

// Close releases the file. Blocked Receives return queue.ErrClosed.
func (q *Queue) Close() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil
	}
	q.closed = true
	close(q.closing)
	q.timer.Stop()
	if err := q.db.Close(); err != nil {
		return fmt.Errorf("local queue: close: %w", err)
	}
	return nil
}

// write runs fn in a write transaction and refreshes nextDue from it. Call
// with q.mu held. prepare, if given, runs first on the raw transaction.
func (q *Queue) write(fn func(buckets) error, prepare ...func(*bolt.Tx) error) error {
	var (
		next    time.Time
		hasNext bool
	)
	err := q.db.Update(func(tx *bolt.Tx) error {
		for _, p := range prepare {
			if err := p(tx); err != nil {
				return err
			}
		}
		b := openBuckets(tx)
		if err := fn(b); err != nil {
			return err
		}
		next, hasNext = b.nextDue()
		return nil
	})
	if err != nil {
		// Rolled back: read what is really there, or keep the last value if
		// even that fails (a later write will correct it).
		_ = q.db.View(func(tx *bolt.Tx) error {
			if tx.Bucket(dueBucket) != nil {
				next, hasNext = openBuckets(tx).nextDue()
				q.nextDue, q.hasNextDue = next, hasNext
			}
			return nil
		})
		return err
	}
	q.nextDue, q.hasNextDue = next, hasNext
	return nil
}
