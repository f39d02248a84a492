package sqs

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/runfleet/runfleet/internal/queue"
)

// ErrInvalidReceipt is matched (errors.Is) by Ack's error when SQS rejects
// the receipt handle as malformed or unknown; retrying cannot help. The
// service's own error stays reachable with errors.As.
var ErrInvalidReceipt = errors.New("sqs queue: invalid receipt handle")

// Ack deletes the delivered message. Deleting an already deleted message
// succeeds. SQS may delete a message acknowledged with a stale receipt
// (moto always does): consumers must be idempotent.
func (q *Queue) Ack(ctx context.Context, m queue.Message) error {
	if m.Receipt == "" {
		return fmt.Errorf("sqs queue: ack %s: %w: empty", m.ID, ErrInvalidReceipt)
	}
	_, err := q.client.DeleteMessage(ctx, &sqsapi.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(m.Receipt)})
	if err == nil {
		return nil
	}
	if isInvalidReceipt(err) {
		err = errors.Join(ErrInvalidReceipt, err)
	}
	return fmt.Errorf("sqs queue: ack %s: %w", m.ID, err)
}

func isInvalidReceipt(err error) bool {
	var invalid *types.ReceiptHandleIsInvalid
	if errors.As(err, &invalid) {
		return true
	}
	// The JSON protocol's typed errors depend on the server naming them the
	// way the SDK expects; emulators do not always, so match the code too.
	return hasErrorCode(err, "ReceiptHandleIsInvalid")
}

func hasErrorCode(err error, codes ...string) bool {
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	for _, code := range codes {
		if apiErr.ErrorCode() == code {
			return true
		}
	}
	return false
}
