package local

import (
	"bytes"
	"context"
	"fmt"
	"time"

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
	now := time.Now()
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
