package sqs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/queue/sqs"
	"github.com/runfleet/runfleet/internal/testenv"
)

// An SQS event as Lambda delivers it, in the shape AWS documents.
const lambdaEvent = `{
  "Records": [
    {
      "messageId": "059f36b4-87a3-44ab-83d2-661975830a7d",
      "receiptHandle": "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a",
      "body": "{\"v\":1,\"kind\":\"create\",\"instance\":\"linux-x64-1a2b3c\"}",
      "attributes": {
        "ApproximateReceiveCount": "3",
        "SentTimestamp": "1545082649183",
        "SenderId": "AIDAIENQZJOLO23YVJ4VO",
        "ApproximateFirstReceiveTimestamp": "1545082649185"
      },
      "messageAttributes": {},
      "md5OfBody": "e4e68fb7bd0e697a0ae8f1bb342846b3",
      "eventSource": "aws:sqs",
      "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:runfleet-work",
      "awsRegion": "us-east-1"
    },
    {
      "messageId": "2e1424d4-f796-459a-8184-9c92662be6da",
      "receiptHandle": "AQEBzWwaftRI0KuVm4tP+/7q1rGgNqicHq",
      "body": "AP8BAg==",
      "attributes": {"ApproximateReceiveCount": "1"},
      "messageAttributes": {
        "RunfleetBodyEncoding": {"stringValue": "base64", "stringListValues": [], "binaryListValues": [], "dataType": "String"}
      },
      "eventSource": "aws:sqs",
      "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:runfleet-work",
      "awsRegion": "us-east-1"
    }
  ]
}`

func TestFromLambda(t *testing.T) {
	t.Parallel()
	var event events.SQSEvent
	if err := json.Unmarshal([]byte(lambdaEvent), &event); err != nil {
		t.Fatal(err)
	}
	got := sqs.FromLambda(event.Records[0])
	want := queue.Message{
		ID:           "059f36b4-87a3-44ab-83d2-661975830a7d",
		Body:         []byte(`{"v":1,"kind":"create","instance":"linux-x64-1a2b3c"}`),
		ReceiveCount: 3,
		Receipt:      "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a",
	}
	if got.ID != want.ID || !bytes.Equal(got.Body, want.Body) || got.ReceiveCount != want.ReceiveCount || got.Receipt != want.Receipt {
		t.Fatalf("FromLambda = %+v, want %+v", got, want)
	}
	if binary := sqs.FromLambda(event.Records[1]); !bytes.Equal(binary.Body, []byte{0x00, 0xff, 0x01, 0x02}) {
		t.Fatalf("FromLambda of a base64-carried body = %x, want 00ff0102", binary.Body)
	}
}

// toLambda is what the event source mapping makes of a received message.
func toLambda(m types.Message) events.SQSMessage {
	attrs := map[string]events.SQSMessageAttribute{}
	for name, v := range m.MessageAttributes {
		attrs[name] = events.SQSMessageAttribute{StringValue: v.StringValue, DataType: aws.ToString(v.DataType)}
	}
	return events.SQSMessage{
		MessageId:         aws.ToString(m.MessageId),
		ReceiptHandle:     aws.ToString(m.ReceiptHandle),
		Body:              aws.ToString(m.Body),
		Attributes:        m.Attributes,
		MessageAttributes: attrs,
	}
}

func TestRequeueIfNotDueCarriesAChainedDelayOn(t *testing.T) {
	t.Parallel()
	client := testenv.SQS(t)
	url, _ := createQueue(t, client, 0)
	q := sqs.New(client, url, sqs.WithMaxDelay(time.Second))
	ctx := context.Background()

	const delay = 3 * time.Second
	sentBefore := time.Now()
	body := []byte{0x00, 'l', 'a', 't', 'e'}
	if err := q.Send(ctx, body, delay); err != nil {
		t.Fatalf("Send: %v", err)
	}
	// The first hop surfaces after about a second, long before it is due.
	raw := receiveRaw(t, client, url, 5)
	if len(raw) != 1 {
		t.Fatalf("first hop: got %d messages, want 1", len(raw))
	}
	early := toLambda(raw[0])
	requeued, err := q.RequeueIfNotDue(ctx, early)
	if err != nil || !requeued {
		t.Fatalf("RequeueIfNotDue(early copy) = %v, %v; want true, nil", requeued, err)
	}
	// What the event source mapping does with a message reported processed.
	if _, err := client.DeleteMessage(ctx, &sqsapi.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(early.ReceiptHandle)}); err != nil {
		t.Fatalf("DeleteMessage: %v", err)
	}

	var due events.SQSMessage
	for {
		raw = receiveRaw(t, client, url, 5)
		if len(raw) != 1 {
			t.Fatalf("waiting for the requeued message: got %d messages, want 1", len(raw))
		}
		due = toLambda(raw[0])
		if requeued, err = q.RequeueIfNotDue(ctx, due); err != nil {
			t.Fatalf("RequeueIfNotDue: %v", err)
		}
		if !requeued {
			break
		}
		_, _ = client.DeleteMessage(ctx, &sqsapi.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(due.ReceiptHandle)})
	}
	if took := time.Since(sentBefore); took < delay-100*time.Millisecond {
		t.Fatalf("message delayed %v treated as due after %v", delay, took)
	}
	if got := sqs.FromLambda(due); !bytes.Equal(got.Body, body) {
		t.Fatalf("body after requeueing = %x, want %x", got.Body, body)
	}
}
