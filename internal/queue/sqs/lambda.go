package sqs

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runfleet/runfleet/internal/queue"
)

// FromLambda turns a message of an SQS event (Lambda event source mapping)
// into a queue.Message. Its Receipt is the receipt handle, so Ack works on
// it, though with ReportBatchItemFailures the event source mapping deletes
// processed messages itself.
func FromLambda(m events.SQSMessage) queue.Message {
	w := wire{body: m.Body, base64: lambdaAttributeString(m.MessageAttributes, encodingAttribute) == encodingBase64}
	return queue.Message{
		ID:           m.MessageId,
		Body:         w.decode(),
		ReceiveCount: parseReceiveCount(m.Attributes["ApproximateReceiveCount"]),
		Receipt:      m.ReceiptHandle,
	}
}

// RequeueIfNotDue must run on every message a Lambda worker gets, before
// acting on it. A message carrying a chained delay that is not over yet is
// sent on for the time remaining and requeued is true: the worker must then
// skip it and report it as processed, so that the event source mapping
// deletes this early copy. An error means nothing was sent: report the
// message as a batch item failure so it is retried.
func (q *Queue) RequeueIfNotDue(ctx context.Context, m events.SQSMessage) (requeued bool, err error) {
	dueAt, chained := parseDueAt(lambdaAttributeString(m.MessageAttributes, dueAtAttribute))
	if !chained || !dueAt.After(time.Now()) {
		return false, nil
	}
	w := wire{body: m.Body, base64: lambdaAttributeString(m.MessageAttributes, encodingAttribute) == encodingBase64}
	if err := q.send(ctx, q.prepare(w, dueAt)); err != nil {
		return false, fmt.Errorf("sqs queue: requeue message %s due at %s: %w", m.MessageId, dueAt.Format(time.RFC3339), err)
	}
	return true, nil
}
