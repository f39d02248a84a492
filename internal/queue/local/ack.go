package local

import (
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/runfleet/runfleet/internal/boltcommit"
	"github.com/runfleet/runfleet/internal/queue"
)

// Ack removes the delivered message for good. Acknowledging a message that
// is already gone succeeds; a stale receipt (the message was delivered again
// since) succeeds too but leaves the message queued, as SQS documents.
// Neither writes anything, so neither costs a commit.
func (q *Queue) Ack(ctx context.Context, m queue.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	seq, receives, err := parseReceipt(m.Receipt)
	if err != nil {
		return fmt.Errorf("local queue: ack %s: %w", m.ID, err)
	}
	if q.isClosed() {
		return queue.ErrClosed
	}
	err = q.write(func(b buckets) error {
		rec, ok, err := b.get(seq)
		switch {
		case err != nil:
			return err
		case !ok || rec.receives != receives:
			return boltcommit.Unchanged(nil)
		}
		return b.remove(seq, rec)
	})
	if err != nil {
		return fmt.Errorf("local queue: ack %s: %w", m.ID, err)
	}
	return nil
}

// DeadLetters lists the dead-lettered messages, oldest first by send order.
func (q *Queue) DeadLetters(ctx context.Context) ([]queue.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if q.isClosed() {
		return nil, queue.ErrClosed
	}
	var msgs []queue.Message
	err := q.db.View(func(tx *bolt.Tx) error {
		var err error
		msgs, err = q.names.open(tx).deadLetters()
		return err
	})
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		return nil, queue.ErrClosed
	}
	if err != nil {
		return nil, fmt.Errorf("local queue: dead letters: %w", err)
	}
	return msgs, nil
}

func (q *Queue) isClosed() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.closed
}
