package bolt

import (
	"context"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/queue/local"
	"github.com/runfleet/runfleet/internal/store"
)

// QueuedStore is a Store whose file also holds the embedded work queue
// (local.OpenInDB), so that it can be a store.Outbox: an instance and its
// create message commit together. Both share one group commit, so the
// store's and the queue's writes also share fsyncs.
type QueuedStore struct {
	*Store
	queue *local.Queue
}

var _ store.Outbox = (*QueuedStore)(nil)

// OpenWithQueue opens (creating if needed) the store file at path with the
// queue inside it, configured by queueOpts (its OpenTimeout is unused: the
// store's applies).
func OpenWithQueue(path string, queueOpts local.Options, opts ...Option) (*QueuedStore, error) {
	db, o, err := openDB(path, opts)
	if err != nil {
		return nil, err
	}
	q, err := local.OpenInDB(db, queueOpts)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bolt: open queue in %s: %w", path, err)
	}
	// The queue's committer: its commit hook wakes receivers of messages
	// the store's writes add.
	st := &Store{db: db, commits: q.Committer(), now: o.now}
	st.Leases = st.leases()
	return &QueuedStore{Store: st, queue: q}, nil
}

// Queue is the queue kept in the store's file. QueuedStore.Close closes it.
func (s *QueuedStore) Queue() *local.Queue {
	return s.queue
}

// Close closes the queue (ending its blocked receives), then the file.
func (s *QueuedStore) Close() error {
	return errors.Join(s.queue.Close(), s.Store.Close())
}

// CreateInstanceAndSend implements store.Outbox.
func (s *QueuedStore) CreateInstanceAndSend(ctx context.Context, a store.Admission, body []byte) error {
	// Due times follow the queue's clock (local.Options.Now), which need not
	// be the store's (WithClock); read before the transaction, which may
	// re-run.
	now := s.queue.Now()
	return s.admit(ctx, a, func(tx *bbolt.Tx) error {
		return s.queue.SendInTx(tx, body, now, 0)
	})
}
