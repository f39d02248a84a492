package sqs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/runfleet/runfleet/internal/queue"
)

// ErrNoDeadLetterQueue is returned by DeadLetters for a queue with neither a
// configured dead-letter queue nor a redrive policy.
var ErrNoDeadLetterQueue = errors.New("sqs queue: no dead-letter queue")

const (
	// peekLimit bounds DeadLetters on a flooded dead-letter queue; it is for
	// tests, alarms and operators, not for draining.
	peekLimit = 1000
	// peekVisibility hides each message read while the rest are read, so
	// every receive returns new ones; they are made visible again after.
	peekVisibility = 30
)

// DeadLetters lists up to 1000 messages of the dead-letter queue without
// removing them. SQS offers no listing: the messages are received, then made
// visible again at once. ReceiveCount leaves out this read, so it is the
// count at which the message was dead-lettered.
func (q *Queue) DeadLetters(ctx context.Context) ([]queue.Message, error) {
	dlq, err := q.deadLetterQueueURL(ctx)
	if err != nil {
		return nil, err
	}
	var (
		msgs     []queue.Message
		receipts []string
		seen     = map[string]bool{}
	)
	defer func() { q.release(ctx, dlq, receipts) }()
	for len(msgs) < peekLimit {
		out, err := q.client.ReceiveMessage(ctx, &sqsapi.ReceiveMessageInput{
			QueueUrl:            aws.String(dlq),
			MaxNumberOfMessages: maxBatch,
			// Waiting makes SQS look at all its servers, so an empty answer
			// means an empty queue rather than an unlucky sample.
			WaitTimeSeconds:             1,
			VisibilityTimeout:           peekVisibility,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
			MessageAttributeNames:       runfleetAttributes,
		})
		if err != nil {
			return nil, fmt.Errorf("sqs queue: dead letters: %w", err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			receipts = append(receipts, aws.ToString(m.ReceiptHandle))
			msg := fromSQS(m)
			if seen[msg.ID] {
				continue
			}
			seen[msg.ID] = true
			msg.ReceiveCount = max(msg.ReceiveCount-1, 0)
			msg.Receipt = ""
			msgs = append(msgs, msg)
		}
	}
	return msgs, nil
}

// release makes peeked messages visible again; failing that they reappear
// after peekVisibility anyway.
func (q *Queue) release(ctx context.Context, dlq string, receipts []string) {
	for start := 0; start < len(receipts); start += maxBatch {
		end := min(start+maxBatch, len(receipts))
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, 0, end-start)
		for i := start; i < end; i++ {
			entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{
				Id:                aws.String(strconv.Itoa(i)),
				ReceiptHandle:     aws.String(receipts[i]),
				VisibilityTimeout: 0,
			})
		}
		_, err := q.client.ChangeMessageVisibilityBatch(ctx, &sqsapi.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(dlq), Entries: entries})
		if err != nil {
			q.log.WarnContext(ctx, "could not make peeked dead letters visible again", "queue_url", dlq, "error", err)
		}
	}
}

// deadLetterQueueURL is the configured dead-letter queue or, failing that,
// the target of the queue's redrive policy.
func (q *Queue) deadLetterQueueURL(ctx context.Context) (string, error) {
	q.dlqMu.Lock()
	defer q.dlqMu.Unlock()
	if q.dlqURL != "" {
		return q.dlqURL, nil
	}
	attrs, err := q.client.GetQueueAttributes(ctx, &sqsapi.GetQueueAttributesInput{
		QueueUrl:       aws.String(q.url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameRedrivePolicy},
	})
	if err != nil {
		return "", fmt.Errorf("sqs queue: read redrive policy: %w", err)
	}
	policy := attrs.Attributes[string(types.QueueAttributeNameRedrivePolicy)]
	if policy == "" {
		return "", fmt.Errorf("%w for %s", ErrNoDeadLetterQueue, q.url)
	}
	var redrive struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	}
	if err := json.Unmarshal([]byte(policy), &redrive); err != nil {
		return "", fmt.Errorf("sqs queue: redrive policy %q: %w", policy, err)
	}
	// arn:aws:sqs:<region>:<account>:<queue name>
	parts := strings.Split(redrive.DeadLetterTargetArn, ":")
	if len(parts) != 6 || parts[2] != "sqs" {
		return "", fmt.Errorf("sqs queue: redrive policy target %q is not an SQS queue ARN", redrive.DeadLetterTargetArn)
	}
	found, err := q.client.GetQueueUrl(ctx, &sqsapi.GetQueueUrlInput{QueueName: aws.String(parts[5]), QueueOwnerAWSAccountId: aws.String(parts[4])})
	if err != nil {
		return "", fmt.Errorf("sqs queue: find dead-letter queue %s: %w", parts[5], err)
	}
	q.dlqURL = aws.ToString(found.QueueUrl)
	return q.dlqURL, nil
}
