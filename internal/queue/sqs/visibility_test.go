package sqs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/runfleet/runfleet/internal/queue/sqs"
	"github.com/runfleet/runfleet/internal/testenv"
)

// A message received with a long visibility timeout comes back after the
// shorter one ChangeVisibility sets, and not before it.
func TestChangeVisibilityShortensTheWait(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	url, _ := createQueue(t, client, 0)
	q := sqs.New(client, url)
	ctx := context.Background()

	if err := q.Send(ctx, []byte("retry me"), 0); err != nil {
		t.Fatalf("Send: %v", err)
	}
	first := receiveRaw(t, client, url, 5) // hidden for 60 s
	if len(first) != 1 {
		t.Fatalf("received %d messages, want 1", len(first))
	}
	const backoff = 2 * time.Second
	changed := time.Now()
	if err := q.ChangeVisibility(ctx, aws.ToString(first[0].ReceiptHandle), backoff); err != nil {
		t.Fatalf("ChangeVisibility: %v", err)
	}
	// A short poll first: the message must stay hidden until the backoff
	// is over (on a slow machine this poll may already outlast it).
	again := receiveRaw(t, client, url, 1)
	if len(again) == 0 {
		again = receiveRaw(t, client, url, 10)
	}
	if len(again) != 1 || aws.ToString(again[0].MessageId) != aws.ToString(first[0].MessageId) {
		t.Fatalf("after the backoff received %d messages, want the same message back well before its 60 s timeout", len(again))
	}
	if took := time.Since(changed); took < backoff-100*time.Millisecond {
		t.Fatalf("message visible again after %v, want at least %v", took, backoff)
	}
	if got := again[0].Attributes["ApproximateReceiveCount"]; got != "2" {
		t.Fatalf("receive count %s, want 2", got)
	}
}

// Zero makes the message visible at once.
func TestChangeVisibilityToZero(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	url, _ := createQueue(t, client, 0)
	q := sqs.New(client, url)
	ctx := context.Background()

	if err := q.Send(ctx, []byte("now"), 0); err != nil {
		t.Fatalf("Send: %v", err)
	}
	first := receiveRaw(t, client, url, 5)
	if len(first) != 1 {
		t.Fatalf("received %d messages, want 1", len(first))
	}
	if err := q.ChangeVisibility(ctx, aws.ToString(first[0].ReceiptHandle), 0); err != nil {
		t.Fatalf("ChangeVisibility: %v", err)
	}
	out, err := client.ReceiveMessage(ctx, &sqsapi.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 0})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	if len(out.Messages) != 1 {
		t.Fatalf("received %d messages right after ChangeVisibility(0), want the message", len(out.Messages))
	}
}

func TestChangeVisibilityWithInvalidReceipt(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	url, _ := createQueue(t, client, 0)
	q := sqs.New(client, url)

	for _, receipt := range []string{"", "no-such-receipt"} {
		if err := q.ChangeVisibility(context.Background(), receipt, time.Second); !errors.Is(err, sqs.ErrInvalidReceipt) {
			t.Errorf("ChangeVisibility(%q) = %v, want ErrInvalidReceipt", receipt, err)
		}
	}
}
