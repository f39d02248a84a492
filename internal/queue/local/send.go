package local

import (
	"bytes"
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/queue"
)

// Send stores body durably, visible after delay. When a Receive is already
// waiting and there is no delay, the message is stored already delivered to
// it and handed over as soon as the commit is on disk: it skips a take (and
// its fsync), and the receiver never holds a message that might not exist.
func (q *Queue) Send(ctx context.Context, body []byte, delay time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := q.opts.Now()
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return queue.ErrClosed
	}
	// The waiter is taken off the list before the commit, so no one else
	// serves it meanwhile; from here on this Send owes it one handoff.
	var handTo *waiter
	if delay <= 0 && len(q.waiters) > 0 {
		handTo = q.waiters[0]
		q.waiters = q.waiters[1:]
		q.settleLocked()
	}
	q.mu.Unlock()

	rec := record{due: now.Add(max(delay, 0)), sentAt: now}
	if handTo != nil {
		rec = record{due: now.Add(handTo.visibility), sentAt: now, receives: 1, inFlight: true}
	}
	var seq uint64
	err := q.write(func(b buckets) error {
		var err error
		seq, err = b.insert(body, rec)
		return err
	})
	if handTo != nil {
		if err != nil {
			// Nothing was stored: the waiter goes back to looking.
			handTo.deliver(handoff{retry: true})
		} else {
			rec.body = bytes.Clone(body)
			handTo.deliver(handoff{msgs: []queue.Message{delivery(seq, rec)}})
		}
	}
	if err != nil {
		return fmt.Errorf("local queue: send: %w", err)
	}
	return nil
}

// SendInTx adds body to the queue inside tx, a write transaction of the
// Committer's (OpenInDB), visible delay after now, so the message commits
// with whatever else tx writes, or not at all. It follows boltcommit's
// rules: now is read by the caller before the transaction, and it may run
// more than once. There is nothing to do after the commit: the Committer's
// commit hook hands the message to a waiting Receive (by waking it).
func (q *Queue) SendInTx(tx *bolt.Tx, body []byte, now time.Time, delay time.Duration) error {
	b := q.names.open(tx)
	if b.messages == nil {
		return fmt.Errorf("local queue: send in transaction: the queue's buckets are not in this file")
	}
	if _, err := b.insert(body, record{due: now.Add(max(delay, 0)), sentAt: now}); err != nil {
		return fmt.Errorf("local queue: send in transaction: %w", err)
	}
	return nil
}
