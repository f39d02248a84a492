package work

import (
	"context"
	"log/slog"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runfleet/runfleet/internal/lambdafn"
)

// retryBatch answers a batch the worker could not start for: every record
// is a batch item failure, hidden for the same short backoff as any failed
// record (retrySoon), so the batch is retried within seconds. A function
// error instead would leave the whole batch invisible for the queue's
// visibility timeout (30 minutes) and count as the function failing.
//
// The queue needs only the environment, not the config or a secret, so it
// is at hand when those could not be read. If even the environment is
// wrong, the records come back after the visibility timeout.
func retryBatch(ctx context.Context, log *slog.Logger, options OptionsFunc, ev events.SQSEvent) events.SQSEventResponse {
	resp := events.SQSEventResponse{BatchItemFailures: make([]events.SQSBatchItemFailure, 0, len(ev.Records))}
	for _, rec := range ev.Records {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
	}
	if len(ev.Records) == 0 {
		return resp
	}
	opts, err := options(ctx)
	if err != nil {
		log.ErrorContext(ctx, "batch not handled, and its retry cannot be scheduled: the records come back after the queue's visibility timeout",
			"records", len(ev.Records), "error", err)
		return resp
	}
	q := lambdafn.NewQueue(opts.Options, log)
	var wg sync.WaitGroup
	for _, rec := range ev.Records {
		wg.Go(func() { retrySoon(ctx, log.With("message_id", rec.MessageId), q, rec) })
	}
	wg.Wait()
	log.WarnContext(ctx, "batch not handled: the function could not start; every record is retried after its backoff", "records", len(ev.Records))
	return resp
}
