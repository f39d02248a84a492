package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/leader"
	"github.com/runfleet/runfleet/internal/queue"
)

// WorkerOptions tune the embedded mode's queue consumers.
type WorkerOptions struct {
	Concurrency int           // default 8
	Visibility  time.Duration // default 5m; must exceed the longest create
	Wait        time.Duration // long-poll wait; default 20s
	// RetryAfter is the first wait before a worker does a failed message
	// again itself, while the message is still its own: doubling, at
	// most failedRetries times, never past the message's visibility.
	// Default 1s. A database restarting for a few seconds fails a
	// worker's final write; done again once it is back (the claim is the
	// same receive's own: decideTakeover), the work moves on within
	// seconds, not at the redelivery after Visibility (issue #32).
	RetryAfter time.Duration
	// Life, when set, is this process's liveness (leader.Liveness): each
	// message is done under the life current when it was received, its
	// claims name that life's holder, and the work stops when the life
	// ends — the others take its claims over then (TakeOverDeadWork).
	// Between lives no message is received.
	Life Life
}

// Life is a process's liveness as the workers need it: the holder id of
// the life it is in and a context that ends with it; ok false between
// lives.
type Life interface {
	Current() (holder string, alive context.Context, ok bool)
}

// failedRetries bounds how often a worker does a failed message again
// before leaving it for redelivery: 1+2+4+8 = 15 s at the default.
const failedRetries = 4

// livenessWait is how often a worker between lives looks again.
const livenessWait = 500 * time.Millisecond

// retryFailedAfter is the wait before a worker's try-th repeat (from 0) of
// a failed message, base doubling, and whether to repeat at all: not past
// failedRetries, nor when the wait would outlast the visibility left —
// by then the message may be another worker's.
func retryFailedAfter(try int, base, left time.Duration) (time.Duration, bool) {
	if try >= failedRetries || base <= 0 {
		return 0, false
	}
	wait := base << try
	return wait, wait < left
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
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = time.Second
	}
	var wg sync.WaitGroup
	for range opts.Concurrency {
		wg.Go(func() { e.consume(ctx, q, opts) })
	}
	wg.Wait()
}

func (e *Engine) consume(ctx context.Context, q queue.Queue, opts WorkerOptions) {
	for ctx.Err() == nil {
		if opts.Life != nil {
			if _, _, ok := opts.Life.Current(); !ok {
				// Between lives: a message received now could not be claimed
				// under a live holder.
				if !(leader.RealRuntime{}).Sleep(ctx, livenessWait) {
					return
				}
				continue
			}
		}
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
			e.process(ctx, q, m, opts)
		}
	}
}

// process handles one message. Malformed messages are acknowledged with an
// error log so they never block others (P14). A failed one is done again
// after retryFailedAfter while it is still this worker's, then left for
// redelivery.
func (e *Engine) process(ctx context.Context, q queue.Queue, m queue.Message, opts WorkerOptions) {
	// A shutdown must not cut a create or delete off mid-call (that strands
	// instances in creating/deleting until the reconciler's timeout): work in
	// hand finishes, bounded by the visibility timeout after which the queue
	// would hand the message to someone else anyway.
	deadline := time.Now().Add(opts.Visibility)
	wctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	defer cancel()
	wctx = WithDelivery(wctx, m.ID, m.ReceiveCount)
	if opts.Life != nil {
		holder, alive, ok := opts.Life.Current()
		if !ok {
			e.log.Warn("this process's liveness lapsed; message left for redelivery", "message_id", m.ID, "receive_count", m.ReceiveCount)
			return
		}
		wctx = WithHolder(wctx, holder, alive)
		stop := context.AfterFunc(alive, cancel)
		defer stop()
	}
	for try := 0; ; try++ {
		err := e.HandleMessage(wctx, m.Body)
		if err == nil || errors.Is(err, ErrMalformed) {
			break
		}
		if wctx.Err() != nil && time.Now().Before(deadline) {
			// The life ended under the work: it is the others' now.
			e.log.Warn("this process's liveness lapsed during the work; it is taken over", "message_id", m.ID, "receive_count", m.ReceiveCount, "error", err)
			return
		}
		wait, again := retryFailedAfter(try, opts.RetryAfter, time.Until(deadline))
		// On real time, as the queue's visibility runs; a shutdown (ctx)
		// does not wait out the backoff, the message is left for
		// redelivery.
		if !again || !(leader.RealRuntime{}).Sleep(ctx, wait) {
			e.log.Warn("work failed; left for redelivery", "message_id", m.ID, "receive_count", m.ReceiveCount, "error", err)
			return
		}
		e.log.Warn("work failed; doing it again", "message_id", m.ID, "receive_count", m.ReceiveCount, "try", try+1, "error", err)
	}
	if err := q.Ack(context.WithoutCancel(ctx), m); err != nil {
		e.log.Warn("ack failed; the message will be redelivered and found done", "message_id", m.ID, "error", err)
	}
}
