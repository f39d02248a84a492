package sqs_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/queue/queuetest"
	"github.com/runfleet/runfleet/internal/queue/sqs"
	"github.com/runfleet/runfleet/internal/testenv"
)

func TestContract(t *testing.T) {
	t.Parallel()
	// Moto deletes a message acknowledged with a stale receipt, so the
	// suite's StaleReceiptKeepsMessage check is not claimed here.
	queuetest.Run(t, func(t *testing.T, opts queuetest.Options) queue.Queue {
		client := testenv.SQS(t)
		url, _ := createQueue(t, client, opts.MaxReceives)
		return sqs.New(client, url)
	})
}

func TestLongDelayIsChainedNotTruncated(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	url, _ := createQueue(t, client, 0)
	// One-second hops stand in for SQS's 15 minutes: a 3 s delay takes
	// several, and truncation would deliver it after 1 s.
	q := sqs.New(client, url, sqs.WithMaxDelay(time.Second))
	ctx := context.Background()

	const delay = 3 * time.Second
	sentBefore := time.Now()
	if err := q.Send(ctx, []byte("much later"), delay); err != nil {
		t.Fatalf("Send: %v", err)
	}
	for time.Since(sentBefore) < 2*time.Second {
		msgs, err := q.Receive(ctx, queue.ReceiveOptions{Max: 10, Visibility: time.Minute, Wait: time.Second})
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		if len(msgs) > 0 {
			t.Fatalf("message delayed %v delivered after %v", delay, time.Since(sentBefore))
		}
	}
	msgs, err := q.Receive(ctx, queue.ReceiveOptions{Max: 10, Visibility: time.Minute, Wait: 10 * time.Second})
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	if len(msgs) != 1 || string(msgs[0].Body) != "much later" {
		t.Fatalf("Receive after the delay = %+v, want the delayed message", msgs)
	}
	if took := time.Since(sentBefore); took < delay-100*time.Millisecond {
		t.Fatalf("message delayed %v delivered after %v", delay, took)
	}
	if err := q.Ack(ctx, msgs[0]); err != nil {
		t.Fatalf("Ack: %v", err)
	}
}

func TestSendBatch(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	url, _ := createQueue(t, client, 0)
	q := sqs.New(client, url)
	ctx := context.Background()

	var bodies [][]byte
	for i := range 23 { // three requests, the last one partial
		bodies = append(bodies, []byte{'m', byte('a' + i)})
	}
	bodies = append(bodies, []byte{0x00, 0xff}) // needs base64
	if err := q.SendBatch(ctx, bodies, 0); err != nil {
		t.Fatalf("SendBatch: %v", err)
	}
	got := map[string]bool{}
	for len(got) < len(bodies) {
		msgs, err := q.Receive(ctx, queue.ReceiveOptions{Max: 10, Visibility: time.Minute, Wait: 5 * time.Second})
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		if len(msgs) == 0 {
			t.Fatalf("received %d of %d batched messages", len(got), len(bodies))
		}
		for _, m := range msgs {
			got[string(m.Body)] = true
		}
	}
	for _, b := range bodies {
		if !got[string(b)] {
			t.Fatalf("body %q never received", b)
		}
	}
}

func TestAckWithInvalidReceipt(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	url, _ := createQueue(t, client, 0)
	q := sqs.New(client, url)

	err := q.Ack(context.Background(), queue.Message{ID: "x", Receipt: "no-such-receipt"})
	if !errors.Is(err, sqs.ErrInvalidReceipt) {
		t.Fatalf("Ack with an unknown receipt = %v, want ErrInvalidReceipt", err)
	}
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ReceiptHandleIsInvalid" {
		t.Fatalf("Ack error %v does not expose the service's ReceiptHandleIsInvalid", err)
	}
}

func TestDeadLetters(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	ctx := context.Background()

	t.Run("NoDeadLetterQueue", func(t *testing.T) {
		url, _ := createQueue(t, client, 0)
		if _, err := sqs.New(client, url).DeadLetters(ctx); !errors.Is(err, sqs.ErrNoDeadLetterQueue) {
			t.Fatalf("DeadLetters without a DLQ = %v, want ErrNoDeadLetterQueue", err)
		}
	})

	t.Run("ConfiguredQueueIsPeekedNotDrained", func(t *testing.T) {
		url, _ := createQueue(t, client, 0)
		dlq, _ := createQueue(t, client, 0)
		body := []byte{0x01, 'x'}
		if err := sqs.New(client, dlq).Send(ctx, body, 0); err != nil {
			t.Fatal(err)
		}
		q := sqs.New(client, url, sqs.WithDeadLetterQueue(dlq))
		for round := range 2 { // a second read sees the same: nothing was removed or left hidden
			dead, err := q.DeadLetters(ctx)
			if err != nil {
				t.Fatalf("DeadLetters: %v", err)
			}
			if len(dead) != 1 || !bytes.Equal(dead[0].Body, body) {
				t.Fatalf("DeadLetters round %d = %+v, want the one message", round, dead)
			}
		}
	})
}

// receiveRaw reads the queue as the Lambda event source mapping would: every
// attribute, no adapter in between.
func receiveRaw(t *testing.T, client *sqsapi.Client, url string, wait int32) []types.Message {
	t.Helper()
	out, err := client.ReceiveMessage(context.Background(), &sqsapi.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         10,
		WaitTimeSeconds:             wait,
		VisibilityTimeout:           60,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	return out.Messages
}
