package sqs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"
)

// ChangeVisibility makes the in-flight message held by receiptHandle
// visible again d from now (rounded up to whole seconds, at most 12 h; 0
// means at once), whatever the queue's visibility timeout. A Lambda worker
// uses it to retry a failed record after a short backoff instead of the
// long visibility timeout its function timeout forces on the queue.
//
// An unknown or malformed receipt handle, or one for a message no longer in
// flight, is reported as ErrInvalidReceipt: retrying cannot help.
func (q *Queue) ChangeVisibility(ctx context.Context, receiptHandle string, d time.Duration) error {
	if receiptHandle == "" {
		return fmt.Errorf("sqs queue: change visibility: %w: empty", ErrInvalidReceipt)
	}
	_, err := q.client.ChangeMessageVisibility(ctx, &sqsapi.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(q.url),
		ReceiptHandle:     aws.String(receiptHandle),
		VisibilityTimeout: wholeSeconds(d, maxVisibility),
	})
	if err == nil {
		return nil
	}
	if isInvalidReceipt(err) || hasErrorCode(err, "MessageNotInflight", "AWS.SimpleQueueService.MessageNotInflight") {
		err = errors.Join(ErrInvalidReceipt, err)
	}
	return fmt.Errorf("sqs queue: change visibility to %s: %w", d, err)
}
