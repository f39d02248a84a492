package enginetest

import (
	"context"
	"errors"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/queue"
)

// defaultVisibility bounds one message's work, a provider binary's create
// included, on a loaded machine; workerWait is how long an idle worker's
// receive blocks.
const (
	defaultVisibility = 30 * time.Second
	workerWait        = time.Second
	// workerRetryAfter: a failed message is done again at once, tests
	// seeing behaviour, not waiting.
	workerRetryAfter = 10 * time.Millisecond
)

// StartWorkers starts n queue consumers, as serve's engine.workers. A
// world has them running at most once: stop them before starting again.
func (w *World) StartWorkers(n int) {
	w.TB.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stop != nil {
		w.TB.Fatal("enginetest: workers are running already")
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	w.stop, w.stopped = cancel, stopped
	e, q, visibility := w.Engine, w.Queue, w.visibility()
	go func() {
		defer close(stopped)
		e.Work(ctx, q, engine.WorkerOptions{Concurrency: n, Visibility: visibility, Wait: workerWait, RetryAfter: workerRetryAfter})
	}()
}

// StopWorkers stops the consumers and waits for the work in their hands to
// finish (a stop never cuts a create or delete off). Idempotent.
func (w *World) StopWorkers() {
	w.mu.Lock()
	stop, stopped := w.stop, w.stopped
	w.stop, w.stopped = nil, nil
	w.mu.Unlock()
	if stop != nil {
		stop()
		<-stopped
	}
}

// Drain stops the workers, then does every message that is due, in the
// test's goroutine, until none is left: when it returns, whatever was asked
// of the engine has happened, except retries it delayed. A test asserts
// after it that something did NOT happen, without sleeping.
func (w *World) Drain() {
	w.TB.Helper()
	w.StopWorkers()
	ctx := context.Background()
	for {
		msgs, err := w.Queue.Receive(ctx, queue.ReceiveOptions{Max: 10, Visibility: w.visibility()})
		if err != nil {
			w.TB.Fatalf("drain the queue: %v", err)
		}
		if len(msgs) == 0 {
			return
		}
		for _, m := range msgs {
			if err := w.Engine.HandleMessage(engine.WithDelivery(ctx, m.ID, m.ReceiveCount), m.Body); err != nil && !errors.Is(err, engine.ErrMalformed) {
				w.TB.Fatalf("drain the queue: %v\nlog:\n%s", err, w.Logs.Tail(40))
			}
			if err := w.Queue.Ack(ctx, m); err != nil {
				w.TB.Fatalf("drain the queue: %v", err)
			}
		}
	}
}

func (w *World) visibility() time.Duration {
	if w.opts.WorkerVisibility > 0 {
		return w.opts.WorkerVisibility
	}
	return defaultVisibility
}
