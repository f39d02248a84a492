package sqs

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Send enqueues body, invisible for delay (rounded up to whole seconds);
// delays beyond the per-hop maximum are chained, never truncated.
func (q *Queue) Send(ctx context.Context, body []byte, delay time.Duration) error {
	if err := q.send(ctx, q.prepare(toWire(body), time.Now().Add(delay))); err != nil {
		return fmt.Errorf("sqs queue: send: %w", err)
	}
	return nil
}

func (q *Queue) send(ctx context.Context, out outgoing) error {
	_, err := q.client.SendMessage(ctx, &sqsapi.SendMessageInput{
		QueueUrl:          aws.String(q.url),
		MessageBody:       aws.String(out.body.body),
		DelaySeconds:      out.delay,
		MessageAttributes: out.attrs,
	})
	return err
}

// BatchError reports the bodies SendBatch could not enqueue.
type BatchError struct {
	// Failed holds the indexes, in the caller's slice, of the bodies not sent.
	Failed []int
	// Err is the first failure.
	Err error
}

func (e *BatchError) Error() string {
	return fmt.Sprintf("sqs queue: send batch: %d bodies not sent (indexes %v): %v", len(e.Failed), e.Failed, e.Err)
}

func (e *BatchError) Unwrap() error { return e.Err }

// SendBatch enqueues bodies, all with the same delay, ten per request. On
// partial failure it returns a *BatchError naming the bodies not sent; the
// others are enqueued.
func (q *Queue) SendBatch(ctx context.Context, bodies [][]byte, delay time.Duration) error {
	dueAt := time.Now().Add(delay)
	batchErr := &BatchError{}
	for start := 0; start < len(bodies); start += maxBatch {
		end := min(start+maxBatch, len(bodies))
		entries := make([]types.SendMessageBatchRequestEntry, 0, end-start)
		for i := start; i < end; i++ {
			out := q.prepare(toWire(bodies[i]), dueAt)
			entries = append(entries, types.SendMessageBatchRequestEntry{
				Id:                aws.String(strconv.Itoa(i)),
				MessageBody:       aws.String(out.body.body),
				DelaySeconds:      out.delay,
				MessageAttributes: out.attrs,
			})
		}
		result, err := q.client.SendMessageBatch(ctx, &sqsapi.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
		if err != nil {
			batchErr.add(err, indexes(start, end)...)
			continue
		}
		for _, failed := range result.Failed {
			i, convErr := strconv.Atoi(aws.ToString(failed.Id))
			if convErr != nil {
				return fmt.Errorf("sqs queue: send batch: unknown entry id %q in failures", aws.ToString(failed.Id))
			}
			batchErr.add(fmt.Errorf("%s: %s", aws.ToString(failed.Code), aws.ToString(failed.Message)), i)
		}
	}
	if len(batchErr.Failed) > 0 {
		return batchErr
	}
	return nil
}

func (e *BatchError) add(err error, failed ...int) {
	if e.Err == nil {
		e.Err = err
	}
	e.Failed = append(e.Failed, failed...)
}

func indexes(start, end int) []int {
	out := make([]int, 0, end-start)
	for i := start; i < end; i++ {
		out = append(out, i)
	}
	return out
}
