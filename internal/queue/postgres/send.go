package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/runfleet/runfleet/internal/queue"
)

// sendSQL inserts a message due delay after now; the insert trigger
// wakes receivers once it commits.
const sendSQL = `
INSERT INTO runfleet_queue (queue, body, sent_at, visible_at)
VALUES ($1, $3, ` + nowSQL + `, ` + nowSQL + ` + $4::bigint * interval '1 microsecond')`

// Send implements queue.Queue. Any delay is honoured: there is no maximum.
func (q *Queue) Send(ctx context.Context, body []byte, delay time.Duration) error {
	if q.isClosed() {
		return queue.ErrClosed
	}
	return q.send(ctx, q.pool, body, delay)
}

// SendInTx adds the message in tx, someone else's transaction on the same
// database (the store's outbox): it is queued if and only if tx commits,
// and receivers hear of it at the commit.
func (q *Queue) SendInTx(ctx context.Context, tx pgx.Tx, body []byte, delay time.Duration) error {
	return q.send(ctx, tx, body, delay)
}

// execer is what a pool and a transaction both offer.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func (q *Queue) send(ctx context.Context, db execer, body []byte, delay time.Duration) error {
	if delay < 0 {
		delay = 0
	}
	if body == nil {
		body = []byte{}
	}
	if _, err := db.Exec(ctx, sendSQL, q.opts.Name, q.clock(), body, micros(delay)); err != nil {
		return fmt.Errorf("postgres queue: send: %w", err)
	}
	return nil
}
