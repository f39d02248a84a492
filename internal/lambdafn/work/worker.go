package work

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/queue/sqs"
)

// SQSHandler is what lambda.Start runs for the WorkerFunction: the work
// queue's SQS event source mapping, with ReportBatchItemFailures on.
type SQSHandler func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)

// Worker is the WorkerFunction, built from the environment on the first
// invocation.
func Worker() SQSHandler { return NewWorker(FromEnvironment(lambdafn.RoleWorker), nil) }

// NewWorker is the WorkerFunction with its Options from options; a failed
// start is logged to log (nil: JSON lines on stdout). A worker that cannot
// start (an SSM or Secrets Manager hiccup, a bad config) fails no
// invocation: it reports every record as a batch item failure, each hidden
// for its short retry backoff (retryBatch).
func NewWorker(options OptionsFunc, log *slog.Logger) SQSHandler {
	app := lambdafn.NewLazy(lambdafn.RoleWorker, func(ctx context.Context) (*App, error) {
		opts, err := options(ctx)
		if err != nil {
			return nil, err
		}
		return Build(ctx, lambdafn.RoleWorker, opts)
	}, log)
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		a, err := app.Get(ctx)
		if err != nil {
			return retryBatch(ctx, app.Logger(ctx), options, ev), nil
		}
		return a.HandleSQS(ctx, ev)
	}
}

// maxConcurrentRecords bounds the records one invocation works on at once.
// It equals the event source mapping's BatchSize (10), so a batch runs fully
// in parallel while a larger one configured later cannot exhaust memory or
// the provider's patience.
const maxConcurrentRecords = 10

// reportMargin is kept free at the end of an invocation: work still running
// then is cancelled and its record reported as failed, so the records that
// did finish are reported as such instead of being lost to a function
// timeout, which would fail (and redeliver) the whole batch.
const reportMargin = 3 * time.Second

// beforeTimeout ends ctx reportMargin before the invocation's deadline,
// when there is that much time left.
func beforeTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok || time.Until(deadline) <= 2*reportMargin {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, deadline.Add(-reportMargin))
}

// recordOutcome is what became of one record of a batch.
type recordOutcome int

const (
	recordDone      recordOutcome = iota // finished with; the mapping deletes it
	recordMalformed                      // can never succeed; acknowledged with an error log
	recordRequeued                       // an early hop of a long delay, sent on
	recordFailed                         // transient; reported so only it is retried
)

// HandleSQS is the worker: the SQS event source mapping's handler, with
// ReportBatchItemFailures on. Records are handled independently and
// concurrently; only records whose work failed transiently (or panicked)
// are returned as batch item failures, so one bad record never makes the
// mapping retry — or, worse, delete — the others (lessons-from-peers P1).
// Each failed record is first hidden for a short backoff (retrySoon), so it
// is retried within seconds rather than after the queue's visibility timeout.
// A malformed record is logged and acknowledged, never retried (P14). The
// returned error is always nil: a function error would fail the whole batch.
func (a *App) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	log := a.InvocationLogger(ctx)
	metrics := a.startMetrics()
	defer metrics.flush(ctx, log)
	invocation := ctx
	ctx, cancel := beforeTimeout(ctx)
	defer cancel()
	outcomes := make([]recordOutcome, len(ev.Records))
	slots := make(chan struct{}, maxConcurrentRecords)
	var wg sync.WaitGroup
	for i, rec := range ev.Records {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			recLog := log.With("message_id", rec.MessageId)
			outcomes[i] = a.handleRecord(ctx, recLog, rec)
			if outcomes[i] == recordFailed {
				// The record's own context may be the one that ran out.
				retrySoon(invocation, recLog, a.Queue, rec)
			}
		})
	}
	wg.Wait()

	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	var counts [recordFailed + 1]int
	for i, outcome := range outcomes {
		counts[outcome]++
		if outcome == recordFailed {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
		}
	}
	log.InfoContext(ctx, "batch handled", "records", len(ev.Records),
		"done", counts[recordDone], "malformed", counts[recordMalformed], "requeued", counts[recordRequeued], "failed", counts[recordFailed])
	return resp, nil
}

// handleRecord does one record's work. A panic is contained here, in the
// record's own goroutine, and fails that record only.
func (a *App) handleRecord(ctx context.Context, log *slog.Logger, rec events.SQSMessage) (outcome recordOutcome) {
	defer func() {
		if p := recover(); p != nil {
			log.ErrorContext(ctx, "queue message handling panicked; it will be retried and, if it keeps failing, dead-lettered",
				"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			outcome = recordFailed
		}
	}()
	msg := sqs.FromLambda(rec)
	log = log.With("receive_count", msg.ReceiveCount)

	// A delay longer than SQS allows arrives in hops; an early hop is sent on
	// and must not be acted on.
	requeued, err := a.Queue.RequeueIfNotDue(ctx, rec)
	if err != nil {
		log.WarnContext(ctx, "delayed message could not be sent on; it will be retried", "error", err)
		return recordFailed
	}
	if requeued {
		log.DebugContext(ctx, "message not due yet; sent on for the rest of its delay")
		return recordRequeued
	}

	eng, err := a.engine(log)
	if err != nil {
		log.ErrorContext(ctx, "engine cannot be built; message will be retried", "error", err)
		return recordFailed
	}
	if isEventBridgeEvent(msg.Body) {
		return handleEC2Event(ctx, log, eng, msg.Body)
	}
	err = eng.HandleMessage(engine.WithDelivery(asInvocation(ctx), msg.ID, msg.ReceiveCount), msg.Body)
	switch {
	case err == nil:
		return recordDone
	case errors.Is(err, engine.ErrMalformed):
		// HandleMessage has logged it at error level through log, so with
		// this record's message_id; a second error line would count one
		// bad message twice. This one only says what became of it.
		log.DebugContext(ctx, "malformed queue message acknowledged; it will not be retried")
		return recordMalformed
	default:
		log.WarnContext(ctx, "work failed; message will be retried", "error", err)
		return recordFailed
	}
}

// A failed record is retried after retryBackoffBase × 2^(receives−1), at
// most retryBackoffMax, jittered. Left alone it would reappear only after
// the queue's visibility timeout, which SQS wants at six times the worker's
// timeout (30 minutes), and reach the dead-letter queue hours later.
const (
	retryBackoffBase = 5 * time.Second
	retryBackoffMax  = 5 * time.Minute
	// retryCallBudget bounds the ChangeMessageVisibility call; it fits in
	// reportMargin, so a record cut off near the deadline still gets it.
	retryCallBudget = 2 * time.Second
)

// retryBackoff is how long a record that failed on its receives-th delivery
// stays hidden. jitter in [0, 1) spreads the upper half of the interval, so
// records that failed together (one store hiccup) do not all come back
// at once, while none comes back sooner than half the backoff.
func retryBackoff(receives int, jitter float64) time.Duration {
	d := retryBackoffBase
	for n := 1; n < receives && d < retryBackoffMax; n++ {
		d *= 2
	}
	d = min(d, retryBackoffMax)
	return d/2 + time.Duration(jitter*float64(d/2))
}

// retrySoon shortens a failed record's visibility to its backoff. It is
// best effort: if it fails, the record is still reported as failed and comes
// back after the queue's visibility timeout instead.
func retrySoon(ctx context.Context, log *slog.Logger, q *sqs.Queue, rec events.SQSMessage) {
	backoff := retryBackoff(sqs.FromLambda(rec).ReceiveCount, rand.Float64())
	ctx, cancel := context.WithTimeout(ctx, retryCallBudget)
	defer cancel()
	if err := q.ChangeVisibility(ctx, rec.ReceiptHandle, backoff); err != nil {
		log.WarnContext(ctx, "could not schedule the failed message's retry; it comes back after the queue's visibility timeout instead",
			"error", err, "backoff_ms", backoff.Milliseconds())
		return
	}
	log.InfoContext(ctx, "failed message scheduled for retry", "backoff_ms", backoff.Milliseconds())
}
