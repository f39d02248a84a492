package local

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/queue"
)

// Send stores body durably, visible after delay. When a Receive is already
// waiting and there is no delay, the message is handed to it inside the same
// transaction, already marked delivered: the receiver starts work while the
// commit is being synced. Send still returns only once the message is on
// disk; should that commit fail, the receiver holds a delivery of a message
// that does not exist, which at-least-once consumers already tolerate (its
// Ack is a no-op) and the caller, seeing the error, sends again.
func (q *Queue) Send(ctx context.Context, body []byte, delay time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return queue.ErrClosed
	}

	var handedTo *waiter
	err := q.write(func(b buckets) error {
		if delay <= 0 && len(q.waiters) > 0 {
			handedTo = q.waiters[0]
			rec := record{due: now.Add(handedTo.visibility), sentAt: now, receives: 1, inFlight: true}
			seq, err := b.insert(body, rec)
			if err != nil {
				return err
			}
			rec.body = bytes.Clone(body)
			q.waiters = q.waiters[1:]
			handedTo.deliver([]queue.Message{delivery(seq, rec)}, nil)
			return nil
		}
		_, err := b.insert(body, record{due: now.Add(max(delay, 0)), sentAt: now})
		return err
	})
	if err != nil {
		return fmt.Errorf("local queue: send: %w", err)
	}
	q.rearm()
	return nil
}
