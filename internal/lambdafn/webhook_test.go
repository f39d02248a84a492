package lambdafn_test

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/webhook"
)

// Bad requests through the Function URL are refused with the status that
// says why, and change nothing: no item in DynamoDB, no message in SQS.
func TestInvalidWebhookRequestsChangeNothing(t *testing.T) {
	s := newStack(t, stackOptions{})
	intake := s.webhook()
	valid := jobPayload(t, runner.ActionQueued, 7000000701, "")
	oversize := append(bytes.Repeat([]byte(" "), 65537), valid...)

	for _, tc := range []struct {
		name   string
		event  events.LambdaFunctionURLRequest
		status int
	}{
		{"unsigned", withEvent(functionURLEvent(t, valid), func(ev *events.LambdaFunctionURLRequest) {
			delete(ev.Headers, "x-hub-signature-256")
		}), http.StatusUnauthorized},
		{"wrong signature", withEvent(functionURLEvent(t, valid), func(ev *events.LambdaFunctionURLRequest) {
			ev.Headers["x-hub-signature-256"] = webhook.Sign([]byte("not-the-secret"), valid)
		}), http.StatusUnauthorized},
		{"signed, then body changed", withEvent(functionURLEvent(t, valid), func(ev *events.LambdaFunctionURLRequest) {
			ev.Body = ev.Body[:len(ev.Body)-8] + "AAAAAAA="
		}), http.StatusUnauthorized},
		{"oversize base64 body", functionURLEvent(t, oversize), http.StatusRequestEntityTooLarge},
		{"oversize plain body", plainBody(functionURLEvent(t, oversize), oversize), http.StatusRequestEntityTooLarge},
		{"malformed JSON, signed", functionURLEvent(t, []byte(`{"action": "queued", "workflow_job": {`)), http.StatusBadRequest},
		{"no job id, signed", functionURLEvent(t, []byte(`{"action": "queued", "repository": {"full_name": "octo-org/x"}}`)), http.StatusBadRequest},
		{"base64 garbage", withEvent(functionURLEvent(t, valid), func(ev *events.LambdaFunctionURLRequest) {
			ev.Body = "%%% not base64 %%%"
		}), http.StatusBadRequest},
		{"GET", withEvent(functionURLEvent(t, valid), func(ev *events.LambdaFunctionURLRequest) {
			ev.RequestContext.HTTP.Method = http.MethodGet
		}), http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, reply := s.deliver(t, intake, tc.event)
			if status != tc.status || reply.Status != webhook.StatusRejected || reply.Message == "" {
				t.Fatalf("got %d %+v, want %d rejected with a reason", status, reply, tc.status)
			}
		})
	}

	// The function wrote the installation id when it started; nothing else.
	scan, err := s.ddb.Scan(context.Background(), &dynamodb.ScanInput{
		TableName:                 aws.String(s.env.Table),
		FilterExpression:          aws.String("pk <> :installation"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":installation": &ddbtypes.AttributeValueMemberS{Value: "META#installation"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if scan.Count != 0 {
		t.Fatalf("bad requests wrote %d items to DynamoDB: %v", scan.Count, scan.Items)
	}
	if visible, inFlight, delayed := s.queueDepth(t); visible+inFlight+delayed != 0 {
		t.Fatalf("bad requests enqueued %d/%d/%d messages", visible, inFlight, delayed)
	}
	if lines := s.logs.Lines(t, map[string]any{"msg": "webhook rejected", "level": "WARN"}); len(lines) < 9 {
		t.Fatalf("%d warn lines for 9 rejections", len(lines))
	}
}

// Function URLs pass text bodies through as they are (isBase64Encoded
// false); the signature is checked over the same bytes either way.
func TestPlainAndBase64BodiesAreBothAccepted(t *testing.T) {
	s := newStack(t, stackOptions{})
	intake := s.webhook()
	body := jobPayload(t, runner.ActionQueued, 7000000801, "")
	if status, reply := s.deliver(t, intake, plainBody(functionURLEvent(t, body), body)); status != http.StatusOK || reply.Status != webhook.StatusProcessed {
		t.Fatalf("plain body: %d %+v", status, reply)
	}
	body = jobPayload(t, runner.ActionQueued, 7000000802, "")
	if status, reply := s.deliver(t, intake, functionURLEvent(t, body)); status != http.StatusOK || reply.Status != webhook.StatusProcessed {
		t.Fatalf("base64 body: %d %+v", status, reply)
	}
	ping := withEvent(functionURLEvent(t, []byte(`{"zen": "Keep it logically awesome.", "hook_id": 480000001}`)), func(ev *events.LambdaFunctionURLRequest) {
		ev.Headers["x-github-event"] = "ping"
	})
	if status, reply := s.deliver(t, intake, ping); status != http.StatusOK || reply.Status != webhook.StatusPong {
		t.Fatalf("ping: %d %+v", status, reply)
	}
}

func withEvent(ev events.LambdaFunctionURLRequest, change func(*events.LambdaFunctionURLRequest)) events.LambdaFunctionURLRequest {
	change(&ev)
	return ev
}

func plainBody(ev events.LambdaFunctionURLRequest, body []byte) events.LambdaFunctionURLRequest {
	ev.Body, ev.IsBase64Encoded = string(body), false
	return ev
}
