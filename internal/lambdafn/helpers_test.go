package lambdafn_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	sqsapi "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/middleware"
)

// --- helpers ---------------------------------------------------------------

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustUnmarshal(t testing.TB, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("unmarshal %s: %v", strings.TrimSpace(string(data[:min(len(data), 200)])), err)
	}
}

func errorAs[T error](err error) (T, bool) {
	var target T
	ok := errors.As(err, &target)
	return target, ok
}

// sendRecorder keeps every SendMessage the functions make, as SDK
// middleware on the real client: what SQS was asked to deliver and when.
type sendRecorder struct {
	mu    sync.Mutex
	sends []sentMessage
}

type sentMessage struct {
	body  string
	delay time.Duration
}

func (r *sendRecorder) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("runfleetTestRecordSends",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if send, ok := in.Parameters.(*sqsapi.SendMessageInput); ok {
				r.mu.Lock()
				r.sends = append(r.sends, sentMessage{body: aws.ToString(send.MessageBody), delay: time.Duration(send.DelaySeconds) * time.Second})
				r.mu.Unlock()
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// matching returns the sends whose body contains every one of parts.
func (r *sendRecorder) matching(parts ...string) []sentMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []sentMessage
	for _, m := range r.sends {
		keep := true
		for _, p := range parts {
			keep = keep && strings.Contains(m.body, p)
		}
		if keep {
			out = append(out, m)
		}
	}
	return out
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// batchKind names what a batch's messages ask for, for handler timings.
func batchKind(ev events.SQSEvent) string {
	kinds := map[string]bool{}
	for _, r := range ev.Records {
		var m struct {
			Kind string `json:"kind"`
		}
		_ = json.Unmarshal([]byte(r.Body), &m)
		kinds[m.Kind] = true
	}
	if len(kinds) == 1 {
		for k := range kinds {
			return k
		}
	}
	return "mixed"
}

// deleteHandled deletes the records of event the worker did not report as
// failed, as the event source mapping does after a batch.
func deleteHandled(t testing.TB, client *sqsapi.Client, queueURL string, event events.SQSEvent, resp events.SQSEventResponse) {
	t.Helper()
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	var entries []sqstypes.DeleteMessageBatchRequestEntry
	for i, rec := range event.Records {
		if !failed[rec.MessageId] {
			entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(rec.ReceiptHandle)})
		}
	}
	if len(entries) == 0 {
		return
	}
	if _, err := client.DeleteMessageBatch(context.Background(), &sqsapi.DeleteMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: entries}); err != nil {
		t.Fatalf("DeleteMessageBatch: %v", err)
	}
}
