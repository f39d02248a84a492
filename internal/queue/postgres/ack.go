package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/runfleet/runfleet/internal/queue"
)

// receipt names one delivery: the message and its receive count, which
// every redelivery increments, so an earlier delivery's receipt no longer
// matches.
func receipt(id int64, receives int) string {
	return strconv.FormatInt(id, 10) + ":" + strconv.Itoa(receives)
}

func parseReceipt(r string) (id int64, receives int, err error) {
	idText, countText, ok := strings.Cut(r, ":")
	if ok {
		id, err = strconv.ParseInt(idText, 10, 64)
		if err == nil {
			receives, err = strconv.Atoi(countText)
		}
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("%w %q", ErrInvalidReceipt, r)
	}
	return id, receives, nil
}

// Ack implements queue.Queue. A message already gone is not an error; a
// stale receipt (the message was delivered again since) is not one
// either, and leaves the message queued, as SQS documents.
func (q *Queue) Ack(ctx context.Context, m queue.Message) error {
	id, receives, err := parseReceipt(m.Receipt)
	if err != nil {
		return fmt.Errorf("postgres queue: ack %s: %w", m.ID, err)
	}
	if q.isClosed() {
		return queue.ErrClosed
	}
	_, err = q.pool.Exec(ctx, "DELETE FROM runfleet_queue WHERE id = $1 AND queue = $2 AND receive_count = $3",
		id, q.opts.Name, receives)
	if err != nil {
		return q.failed("ack", ctx, err)
	}
	return nil
}

// DeadLetters implements queue.DeadLetterer: the messages set aside after
// MaxReceives deliveries, oldest first.
func (q *Queue) DeadLetters(ctx context.Context) ([]queue.Message, error) {
	rows, err := q.pool.Query(ctx, `SELECT id, body, receive_count FROM runfleet_queue
		WHERE queue = $1 AND dead_at IS NOT NULL ORDER BY dead_at, id`, q.opts.Name)
	if err != nil {
		return nil, q.failed("dead letters", ctx, err)
	}
	defer rows.Close()
	var out []queue.Message
	for rows.Next() {
		var id int64
		var m queue.Message
		if err := rows.Scan(&id, &m.Body, &m.ReceiveCount); err != nil {
			return nil, q.failed("dead letters", ctx, err)
		}
		m.ID = strconv.FormatInt(id, 10)
		m.Receipt = receipt(id, m.ReceiveCount)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, q.failed("dead letters", ctx, err)
	}
	return out, nil
}
