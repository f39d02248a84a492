package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/queue"
)

// WorkerOptions tune the embedded mode's queue consumers.
type WorkerOptions struct {
	Concurrency int           // default 8
	Visibility  time.Duration // default 5m; must exceed the longest create
	Wait        time.Duration // long-poll wait; default 20s
}

// Work consumes the queue with Concurrency goroutines until ctx is done.
// Consumers block in Receive (the queue wakes them when work arrives), so an
// idle runfleet does no polling. A finished message is acknowledged; a
// failed one is left for redelivery after the visibility timeout (and
// dead-lettered by the queue after its receive limit).
func (e *Engine) Work(ctx context.Context, q queue.Queue, opts WorkerOptions) {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	if opts.Visibility <= 0 {
		opts.Visibility = 5 * time.Minute
	}
	if opts.Wait <= 0 {
		opts.Wait = 20 * time.Second
	}
	var wg sync.WaitGroup
	for range opts.Concurrency {
		wg.Go(func() { e.consume(ctx, q, opts) })
	}
	wg.Wait()
}

func (e *Engine) consume(ctx context.Context, q queue.Queue, opts WorkerOptions) {
	for ctx.Err() == nil {
		msgs, err := q.Receive(ctx, queue.ReceiveOptions{Max: 1, Visibility: opts.Visibility, Wait: opts.Wait})
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, queue.ErrClosed) {
				return
			}
			e.log.Error("queue receive failed", "error", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		for _, m := range msgs {
			e.process(ctx, q, m, opts.Visibility)
		}
	}
}

// process handles one message. Malformed messages are acknowledged with an
// error log so they never block others (P14).
func (e *Engine) process(ctx context.Context, q queue.Queue, m queue.Message, visibility time.Duration) {
	// A shutdown must not cut a create or delete off mid-call (that strands
	// instances in creating/deleting until the reconciler's timeout): work in
	// hand finishes, bounded by the visibility timeout after which the queue
	// would hand the message to someone else anyway.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), visibility)
	defer cancel()
	err := e.HandleMessage(WithDelivery(wctx, m.ID), m.Body)
	if err != nil && !errors.Is(err, ErrMalformed) {
		e.log.Warn("work failed; left for redelivery", "message_id", m.ID, "receive_count", m.ReceiveCount, "error", err)
		return
	}
	if err := q.Ack(context.WithoutCancel(ctx), m); err != nil {
		e.log.Warn("ack failed; the message will be redelivered and found done", "message_id", m.ID, "error", err)
	}
}
