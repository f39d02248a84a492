package sqs

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/runfleet/runfleet/internal/queue"
)

// Receive long-polls for up to opts.Max messages (0 means 1). Wait and
// Visibility are rounded up to whole seconds; Visibility 0 uses the queue's
// own default; a Wait beyond SQS's 20 s spans several requests. Messages
// received before their chained due time are sent on and never returned.
func (q *Queue) Receive(ctx context.Context, opts queue.ReceiveOptions) ([]queue.Message, error) {
	if opts.Max == 0 {
		opts.Max = 1
	}
	if opts.Max < 0 || opts.Max > maxBatch {
		return nil, fmt.Errorf("sqs queue: receive: Max %d outside 1..%d", opts.Max, maxBatch)
	}
	deadline := time.Now().Add(opts.Wait)
	for {
		out, err := q.client.ReceiveMessage(ctx, &sqsapi.ReceiveMessageInput{
			QueueUrl:                    aws.String(q.url),
			MaxNumberOfMessages:         int32(opts.Max),
			WaitTimeSeconds:             wholeSeconds(time.Until(deadline), maxWait),
			VisibilityTimeout:           wholeSeconds(opts.Visibility, maxVisibility),
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
			MessageAttributeNames:       runfleetAttributes,
		})
		if err != nil {
			return nil, fmt.Errorf("sqs queue: receive: %w", err)
		}
		msgs := make([]queue.Message, 0, len(out.Messages))
		for _, m := range out.Messages {
			if q.forwardIfEarly(ctx, m) {
				continue
			}
			msgs = append(msgs, fromSQS(m))
		}
		if len(msgs) > 0 || !time.Now().Before(deadline) {
			return msgs, nil
		}
	}
}

func fromSQS(m types.Message) queue.Message {
	w := wire{body: aws.ToString(m.Body), base64: attributeString(m.MessageAttributes, encodingAttribute) == encodingBase64}
	return queue.Message{
		ID:           aws.ToString(m.MessageId),
		Body:         w.decode(),
		ReceiveCount: parseReceiveCount(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]),
		Receipt:      aws.ToString(m.ReceiptHandle),
	}
}

// forwardIfEarly sends a chained message on for the rest of its delay and
// deletes this early copy, reporting whether it did so. If either step
// fails the copy stays in flight and comes back after its visibility
// timeout, to be forwarded then: a chained delay may run late, never early.
func (q *Queue) forwardIfEarly(ctx context.Context, m types.Message) bool {
	dueAt, chained := parseDueAt(attributeString(m.MessageAttributes, dueAtAttribute))
	if !chained || !dueAt.After(time.Now()) {
		return false
	}
	w := wire{body: aws.ToString(m.Body), base64: attributeString(m.MessageAttributes, encodingAttribute) == encodingBase64}
	if err := q.forward(ctx, w, dueAt, aws.ToString(m.ReceiptHandle)); err != nil {
		q.log.WarnContext(ctx, "could not chain a delayed message on; it will be retried after its visibility timeout",
			"queue_url", q.url, "message_id", aws.ToString(m.MessageId), "due_at", dueAt, "error", err)
	}
	return true
}

// forward re-sends w for the rest of its delay, then deletes the copy held
// by receipt. Sending first means a failure can duplicate but never lose it.
func (q *Queue) forward(ctx context.Context, w wire, dueAt time.Time, receipt string) error {
	if err := q.send(ctx, q.prepare(w, dueAt)); err != nil {
		return fmt.Errorf("send on: %w", err)
	}
	if _, err := q.client.DeleteMessage(ctx, &sqsapi.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(receipt)}); err != nil {
		return fmt.Errorf("delete early copy: %w", err)
	}
	return nil
}
