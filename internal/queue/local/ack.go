package local

import (
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/queue"
)

// Ack removes the delivered message for good. Acknowledging a message that
// is already gone succeeds; a stale receipt (the message was delivered again
// since) succeeds too but leaves the message queued, as SQS documents.
func (q *Queue) Ack(ctx context.Context, m queue.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	seq, receives, err := parseReceipt(m.Receipt)
	if err != nil {
		return fmt.Errorf("local queue: ack %s: %w", m.ID, err)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return queue.ErrClosed
	}
	err = q.write(func(b buckets) error {
		rec, ok, err := b.get(seq)
		if err != nil || !ok || rec.receives != receives {
			return err
		}
		return b.remove(seq, rec)
	})
	if err != nil {
		return fmt.Errorf("local queue: ack %s: %w", m.ID, err)
	}
	q.rearm()
	return nil
}

// DeadLetters lists the dead-lettered messages, oldest first by send order.
func (q *Queue) DeadLetters(ctx context.Context) ([]queue.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, queue.ErrClosed
	}
	var msgs []queue.Message
	err := q.db.View(func(tx *bolt.Tx) error {
		var err error
		msgs, err = openBuckets(tx).deadLetters()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("local queue: dead letters: %w", err)
	}
	return msgs, nil
}
