package lambdafn

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/webhook"
	"github.com/runfleet/runfleet/internal/wiring/policy"
)

// FunctionURLHandler is what lambda.Start runs for a function behind a
// Function URL (payload format 2.0).
type FunctionURLHandler func(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error)

// Webhook is the WebhookFunction: GitHub's workflow_job deliveries, built
// from the environment on the first invocation.
func Webhook() FunctionURLHandler { return NewWebhook(FromEnvironment(RoleWebhook), nil) }

// NewWebhook is the WebhookFunction with its Options from options; a
// failed start is logged to log (nil: JSON lines on stdout). A function
// that cannot start answers 503, so GitHub's delivery log shows a failure
// to redeliver; the reason is logged, not sent to whoever called the
// public URL.
func NewWebhook(options OptionsFunc, log *slog.Logger) FunctionURLHandler {
	app := NewLazy(RoleWebhook, func(ctx context.Context) (*WebhookApp, error) {
		opts, err := options(ctx)
		if err != nil {
			return nil, err
		}
		return BuildWebhook(ctx, opts)
	}, log)
	return func(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		a, err := app.Get(ctx)
		if err != nil {
			return functionURLResponse(http.StatusServiceUnavailable, webhook.Reply{
				Status:  webhook.StatusFailed,
				Message: "runfleet could not start (see the webhook function's logs); nothing was done, redeliver later",
			}), nil
		}
		return a.HandleWebhook(ctx, req)
	}
}

// WebhookApp is the webhook function's: the engine's ledger alone — the
// store, the queue and the pools. It holds no GitHub client and no provider, so the
// function links neither go-github nor a cloud SDK, holds no credentials
// for them, and a provider binary missing from its file system cannot take
// intake down.
type WebhookApp struct {
	*App
	ledger engine.LedgerOptions
}

// BuildWebhook loads the webhook function's App and checks its intake can
// be built.
func BuildWebhook(ctx context.Context, opts Options) (*WebhookApp, error) {
	app, err := Load(ctx, RoleWebhook, opts)
	if err != nil {
		return nil, err
	}
	// The installation id gives each pool its provider-side id, which the
	// instances intake admits carry.
	installationID, err := app.Store.InstallationID(ctx)
	if err != nil {
		return nil, fmt.Errorf("lambdafn: read the installation id: %w", err)
	}
	o := policy.LedgerOptions(app.Config)
	o.InstallationID, o.Store, o.Queue = installationID, app.Store, app.Queue
	w := &WebhookApp{App: app, ledger: o}
	if _, err := w.newIntake(app.Logger); err != nil {
		return nil, err
	}
	return w, nil
}

// HandleWebhook serves GitHub's webhook deliveries through a Lambda Function
// URL (payload format 2.0). Every rule lives in webhook.Intake, shared with
// embedded mode; this only translates the event. It never returns an error:
// a Function URL would turn one into a bare 502 GitHub cannot explain.
func (a *WebhookApp) HandleWebhook(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	log := a.InvocationLogger(ctx)
	resp := a.handleWebhook(ctx, log, req)
	a.Metrics.Webhook(metrics.ClassifyWebhook(webhook.HeadersFromMap(req.Headers).Get(webhook.EventHeader), resp.StatusCode, []byte(resp.Body)))
	a.FlushMetrics(ctx, log)
	return resp, nil
}

// handleWebhook answers one delivery (HandleWebhook).
func (a *WebhookApp) handleWebhook(ctx context.Context, log *slog.Logger, req events.LambdaFunctionURLRequest) events.LambdaFunctionURLResponse {
	intake, err := a.newIntake(log)
	if err != nil {
		log.ErrorContext(ctx, "webhook intake cannot be built", "error", err)
		return functionURLResponse(http.StatusServiceUnavailable, webhook.Reply{
			Status: webhook.StatusFailed, Message: "runfleet is misconfigured (see the webhook function's logs); nothing was done, redeliver later",
		})
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
		return resp
	}
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		// The signature covers the bytes GitHub sent, which Lambda hands
		// over base64-encoded whenever they are not plain text.
		if base64.StdEncoding.DecodedLen(len(req.Body)) > int(intake.MaxBodyBytes())+2 {
			return reply(http.StatusRequestEntityTooLarge, fmt.Sprintf("body is larger than the %d-byte limit", intake.MaxBodyBytes()))
		}
		body, err = base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return reply(http.StatusBadRequest, fmt.Sprintf("body is marked base64-encoded but is not valid base64: %v", err))
		}
	}
	resp := intake.Handle(ctx, webhook.Request{Headers: headers, Body: body})
	return events.LambdaFunctionURLResponse{StatusCode: resp.StatusCode, Headers: responseHeaders(), Body: string(resp.Body)}
}

// newIntake builds the invocation's webhook intake over its own
// engine.Ledger, both logging through log (a few allocations, so every line
// names the Lambda request).
func (a *WebhookApp) newIntake(log *slog.Logger) (*webhook.Intake, error) {
	o := a.ledger
	o.Logger = log
	o.Observer = a.Metrics
	handler, err := engine.NewLedger(o)
	if err != nil {
		return nil, fmt.Errorf("lambdafn: %w", err)
	}
	return webhook.New(webhook.Options{
		Secret:       a.Config.Webhook.Secret,
		MaxBodyBytes: a.Config.Webhook.MaxBodyBytes,
		Handler:      handler,
		Logger:       log,
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
