package local

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/runfleet/runfleet/internal/queue"
)

// waiter is a Receive parked until a message is handed to it.
type waiter struct {
	max        int
	visibility time.Duration
	// handoff is written at most once, with q.mu held, by whoever removes the
	// waiter from q.waiters; its buffer means that never blocks.
	handoff chan handoff
}

type handoff struct {
	msgs []queue.Message
	err  error
}

func (w *waiter) deliver(msgs []queue.Message, err error) {
	w.handoff <- handoff{msgs: msgs, err: err}
}

// Receive returns up to opts.Max visible messages, hidden from other
// receivers for opts.Visibility (Options.DefaultVisibility if 0). With
// nothing visible it blocks up to opts.Wait, without polling, and returns
// an empty slice if nothing came. Max 0 means 1.
func (q *Queue) Receive(ctx context.Context, opts queue.ReceiveOptions) ([]queue.Message, error) {
	if opts.Max == 0 {
		opts.Max = 1
	}
	if opts.Max < 0 || opts.Max > maxBatch {
		return nil, fmt.Errorf("local queue: receive: Max %d outside 1..%d", opts.Max, maxBatch)
	}
	if opts.Visibility <= 0 {
		opts.Visibility = q.opts.DefaultVisibility
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil, queue.ErrClosed
	}
	msgs, err := q.take(opts.Max, opts.Visibility)
	if err != nil || len(msgs) > 0 || opts.Wait <= 0 {
		q.mu.Unlock()
		return msgs, err
	}
	w := &waiter{max: opts.Max, visibility: opts.Visibility, handoff: make(chan handoff, 1)}
	q.waiters = append(q.waiters, w)
	q.rearm()
	q.mu.Unlock()

	deadline := time.NewTimer(opts.Wait)
	defer deadline.Stop()
	select {
	case h := <-w.handoff:
		return h.msgs, h.err
	case <-deadline.C:
		return q.abandon(w, nil)
	case <-ctx.Done():
		return q.abandon(w, ctx.Err())
	case <-q.closing:
		return q.abandon(w, queue.ErrClosed)
	}
}

// abandon takes w off the waiter list. If it is no longer there, it was
// served meanwhile: its messages are already marked delivered, so they are
// returned rather than left hidden for a whole visibility timeout.
func (q *Queue) abandon(w *waiter, reason error) ([]queue.Message, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if i := slices.Index(q.waiters, w); i >= 0 {
		q.waiters = slices.Delete(q.waiters, i, i+1)
		q.rearm()
		return nil, reason
	}
	h := <-w.handoff
	return h.msgs, h.err
}

// take delivers what is visible now. Call with q.mu held. It skips the
// transaction (and its fsync) when the due index says nothing is visible.
func (q *Queue) take(max int, visibility time.Duration) ([]queue.Message, error) {
	now := time.Now()
	if !q.hasNextDue || q.nextDue.After(now) {
		return nil, nil
	}
	var msgs []queue.Message
	err := q.write(func(b buckets) error {
		var err error
		msgs, err = b.take(now, max, visibility, q.opts.MaxReceives)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("local queue: receive: %w", err)
	}
	return msgs, nil
}

// serveWaiters hands visible messages to waiters in arrival order. Call with
// q.mu held.
func (q *Queue) serveWaiters() {
	for len(q.waiters) > 0 {
		w := q.waiters[0]
		msgs, err := q.take(w.max, w.visibility)
		if err == nil && len(msgs) == 0 {
			return
		}
		q.waiters = q.waiters[1:]
		w.deliver(msgs, err)
	}
}

// rearm points the timer at the next due time while anyone waits, and stops
// it otherwise: with no waiter, the next Receive looks at the index itself.
// Call with q.mu held.
func (q *Queue) rearm() {
	if len(q.waiters) == 0 || !q.hasNextDue {
		q.timer.Stop()
		return
	}
	q.timer.Reset(time.Until(q.nextDue))
}

func (q *Queue) onTimer() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.serveWaiters()
	q.rearm()
}
