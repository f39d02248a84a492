package lambdafn

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runfleet/runfleet/internal/webhook"
)

// HandleWebhook serves GitHub's webhook deliveries through a Lambda Function
// URL (payload format 2.0). Every rule lives in webhook.Intake, shared with
// embedded mode; this only translates the event. It never returns an error:
// a Function URL would turn one into a bare 502 GitHub cannot explain.
func (a *App) HandleWebhook(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	log := a.invocationLogger(ctx)
	intake, err := a.intake(log)
	if err != nil {
		log.ErrorContext(ctx, "webhook intake cannot be built", "error", err)
		return functionURLResponse(http.StatusServiceUnavailable, webhook.Reply{
			Status: webhook.StatusFailed, Message: "runfleet is misconfigured (see the webhook function's logs); nothing was done, redeliver later",
		}), nil
	}
	headers := webhook.HeadersFromMap(req.Headers)
	reply := func(status int, message string) events.LambdaFunctionURLResponse {
		id, event := headers.Get(webhook.DeliveryHeader), headers.Get(webhook.EventHeader)
		log.WarnContext(ctx, "webhook rejected", "delivery_id", id, "event", event, "reason", message, "status", status)
		return functionURLResponse(status, webhook.Reply{Status: webhook.StatusRejected, Message: message, DeliveryID: id, Event: event})
	}

	if method := req.RequestContext.HTTP.Method; method != "" && method != http.MethodPost {
		resp := reply(http.StatusMethodNotAllowed, fmt.Sprintf("method %s is not allowed; webhooks are POSTed", method))
		resp.Headers["Allow"] = http.MethodPost
		return resp, nil
	}
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		// The signature covers the bytes GitHub sent, which Lambda hands
		// over base64-encoded whenever they are not plain text.
		if base64.StdEncoding.DecodedLen(len(req.Body)) > int(intake.MaxBodyBytes())+2 {
			return reply(http.StatusRequestEntityTooLarge, fmt.Sprintf("body is larger than the %d-byte limit", intake.MaxBodyBytes())), nil
		}
		body, err = base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return reply(http.StatusBadRequest, fmt.Sprintf("body is marked base64-encoded but is not valid base64: %v", err)), nil
		}
	}
	resp := intake.Handle(ctx, webhook.Request{Headers: headers, Body: body})
	return events.LambdaFunctionURLResponse{StatusCode: resp.StatusCode, Headers: responseHeaders(), Body: string(resp.Body)}, nil
}

// intake builds the invocation's webhook intake over its own engine, both
// logging through log.
func (a *App) intake(log *slog.Logger) (*webhook.Intake, error) {
	eng, err := a.engine(log)
	if err != nil {
		return nil, err
	}
	return webhook.New(webhook.Options{
		Secret:       a.Config.Webhook.Secret,
		MaxBodyBytes: a.Config.Webhook.MaxBodyBytes,
		Handler:      eng,
		// No delivery marks on AWS: every engine path is already idempotent
		// by conditional writes (the queued job's instance name is its
		// idempotency key), and a mark would cost a DynamoDB write per
		// delivery — three per job, 10 writes instead of 7.
		Logger: log,
	})
}

func functionURLResponse(status int, r webhook.Reply) events.LambdaFunctionURLResponse {
	body, err := json.Marshal(r)
	if err != nil {
		body = []byte(`{"status":"failed","message":"reply could not be encoded"}`)
	}
	return events.LambdaFunctionURLResponse{StatusCode: status, Headers: responseHeaders(), Body: string(body)}
}

func responseHeaders() map[string]string {
	return map[string]string{"Content-Type": webhook.ContentType, "X-Content-Type-Options": "nosniff"}
}
