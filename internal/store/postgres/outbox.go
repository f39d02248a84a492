package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	pgqueue "github.com/runfleet/runfleet/internal/queue/postgres"
	"github.com/runfleet/runfleet/internal/store"
)

// QueuedStore is a Store whose database also holds the work queue
// (queue/postgres over the same pool), so that it is a store.Outbox: an
// instance and its create message commit in one transaction.
type QueuedStore struct {
	*Store
	queue *pgqueue.Queue
}

var _ store.Outbox = (*QueuedStore)(nil)

// OpenWithQueue opens the store at dsn and the queue configured by
// queueOpts in the same database, over one connection pool.
func OpenWithQueue(ctx context.Context, dsn string, queueOpts pgqueue.Options, opts ...Option) (*QueuedStore, error) {
	st, err := Open(ctx, dsn, opts...)
	if err != nil {
		return nil, err
	}
	q, err := pgqueue.New(ctx, st.pool, queueOpts)
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("postgres: open the queue: %w", err)
	}
	return &QueuedStore{Store: st, queue: q}, nil
}

// Queue is the queue kept in the store's database. QueuedStore.Close
// closes it.
func (s *QueuedStore) Queue() *pgqueue.Queue {
	return s.queue
}

// Close closes the queue (ending its blocked receives), then the store.
func (s *QueuedStore) Close() error {
	return errors.Join(s.queue.Close(), s.Store.Close())
}

// CreateInstanceAndSend implements store.Outbox: the admission and the
// message in one transaction; receivers hear of the message at its
// commit.
func (s *QueuedStore) CreateInstanceAndSend(ctx context.Context, a store.Admission, body []byte) error {
	return s.admit(ctx, a, func(tx pgx.Tx) error {
		return s.queue.SendInTx(ctx, tx, body, 0)
	})
}
