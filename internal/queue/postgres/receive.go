package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/runfleet/runfleet/internal/queue"
)

// takeSQL claims up to $3 due messages, skipping rows other receivers
// hold: those received $4 times already (when $4 > 0) are dead-lettered,
// the others hidden for $5 microseconds and returned with their new
// receive count. The two updates touch disjoint rows of one claim.
const takeSQL = `
WITH due AS (
	SELECT id, receive_count FROM runfleet_queue
	WHERE queue = $1 AND dead_at IS NULL AND visible_at <= ` + nowSQL + `
	ORDER BY visible_at, id
	LIMIT $3
	FOR UPDATE SKIP LOCKED
), dead AS (
	UPDATE runfleet_queue m SET dead_at = ` + nowSQL + `
	FROM due WHERE m.id = due.id AND $4 > 0 AND due.receive_count >= $4
	RETURNING m.id
)
UPDATE runfleet_queue m
SET receive_count = m.receive_count + 1, visible_at = ` + nowSQL + ` + $5::bigint * interval '1 microsecond'
FROM due WHERE m.id = due.id AND NOT ($4 > 0 AND due.receive_count >= $4)
RETURNING m.id, m.body, m.receive_count`

// nextDueSQL is how long until the queue's earliest live message is due
// (NULL when it holds none).
const nextDueSQL = `
SELECT extract(epoch FROM min(visible_at) - ` + nowSQL + `)::float8
FROM runfleet_queue WHERE queue = $1 AND dead_at IS NULL`

// maxSleep bounds a wait between looks at the table, in case a
// notification was missed while the listener reconnected.
const maxSleep = 5 * time.Second

// Receive implements queue.Queue: up to opts.Max due messages, hidden for
// opts.Visibility (Options.DefaultVisibility if 0). With nothing due it
// blocks up to opts.Wait — woken by a notification, or when the earliest
// message becomes due — and returns an empty slice if nothing came. Max 0
// means 1.
func (q *Queue) Receive(ctx context.Context, opts queue.ReceiveOptions) ([]queue.Message, error) {
	if opts.Max == 0 {
		opts.Max = 1
	}
	if opts.Max < 0 || opts.Max > maxBatch {
		return nil, fmt.Errorf("postgres queue: receive: Max %d outside 1..%d", opts.Max, maxBatch)
	}
	if opts.Visibility <= 0 {
		opts.Visibility = q.opts.DefaultVisibility
	}
	until := time.Now().Add(opts.Wait)
	for {
		if q.isClosed() {
			return nil, queue.ErrClosed
		}
		// Taken before looking, so a message committed after the look
		// still wakes this receiver.
		woken := q.notices.next()
		msgs, err := q.take(ctx, opts)
		if err != nil || len(msgs) > 0 {
			return msgs, err
		}
		left := time.Until(until)
		if left <= 0 {
			return []queue.Message{}, nil
		}
		sleep, err := q.sleepFor(ctx, left)
		if err != nil {
			return nil, err
		}
		if err := q.wait(ctx, woken, sleep); err != nil {
			return nil, err
		}
	}
}

// take claims what is due now.
func (q *Queue) take(ctx context.Context, opts queue.ReceiveOptions) ([]queue.Message, error) {
	rows, err := q.pool.Query(ctx, takeSQL, q.opts.Name, q.clock(), opts.Max, q.opts.MaxReceives, micros(opts.Visibility))
	if err != nil {
		return nil, q.failed("receive", ctx, err)
	}
	defer rows.Close()
	msgs := []queue.Message{}
	for rows.Next() {
		var id int64
		var m queue.Message
		if err := rows.Scan(&id, &m.Body, &m.ReceiveCount); err != nil {
			return nil, q.failed("receive", ctx, err)
		}
		m.ID = strconv.FormatInt(id, 10)
		m.Receipt = receipt(id, m.ReceiveCount)
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return nil, q.failed("receive", ctx, err)
	}
	return msgs, nil
}

// sleepFor is how long to wait before looking again: until the earliest
// message is due, at most left and maxSleep.
func (q *Queue) sleepFor(ctx context.Context, left time.Duration) (time.Duration, error) {
	sleep := min(left, maxSleep)
	var seconds *float64
	if err := q.pool.QueryRow(ctx, nextDueSQL, q.opts.Name, q.clock()).Scan(&seconds); err != nil {
		return 0, q.failed("receive", ctx, err)
	}
	if seconds != nil {
		due := time.Duration(*seconds * float64(time.Second))
		// A message already due was just claimed by someone else, or is
		// locked by one claiming it: look again soon, not at once.
		sleep = min(sleep, max(due, 10*time.Millisecond))
	}
	return sleep, nil
}

// wait blocks until woken, the sleep is over, ctx ends or the queue
// closes.
func (q *Queue) wait(ctx context.Context, woken <-chan struct{}, sleep time.Duration) error {
	timer := time.NewTimer(sleep)
	defer timer.Stop()
	select {
	case <-woken:
	case <-timer.C:
	case <-ctx.Done():
		return ctx.Err()
	case <-q.closing:
		return queue.ErrClosed
	}
	return nil
}

// failed reports a statement's error; one cut short by ctx is ctx's own
// error, so callers can tell a deadline from a database fault.
func (q *Queue) failed(op string, ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return fmt.Errorf("postgres queue: %s: %w", op, err)
}
