// Package webhook is runfleet's intake for GitHub webhooks: it enforces the
// body limit, verifies the HMAC signature, answers ping, ignores every event
// but workflow_job, decodes its payload (JSON or form-encoded) and hands
// each job event to the engine's intake port (engine.JobEventHandler),
// named by its delivery id (engine.Webhook). Send
// delivers a signed webhook as GitHub does, for `runfleet webhook send` and
// tests.
//
// The core, Intake.Handle, knows nothing about the transport, so net/http
// (ServeHTTP, embedded mode) and the webhook function's Lambda Function URL
// adapter (internal/lambdafn) share every rule. Bad input never changes state: the engine is not called; the
// response and one warn log line say why. Delivery ids are not recorded:
// the job ledger makes every event idempotent by conditional writes, so a
// redelivery (same X-GitHub-Delivery) is simply processed again — which is
// what recovers a delivery whose first processing was cut off by a crash.
package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
)

// DefaultMaxBodyBytes is far above any workflow_job payload (a few KB, tens
// with many steps) and far below what would cost real memory per request.
const DefaultMaxBodyBytes int64 = 1 << 20

// DefaultProcessTimeout bounds the work done for one accepted delivery.
const DefaultProcessTimeout = 30 * time.Second

// Options configure an Intake.
type Options struct {
	// Secret is the webhook secret shared with GitHub. Required.
	Secret []byte
	// MaxBodyBytes defaults to DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Handler receives every valid workflow_job. Required.
	Handler engine.JobEventHandler
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// ProcessTimeout defaults to DefaultProcessTimeout.
	ProcessTimeout time.Duration
}

// Intake turns webhook requests into engine calls. It is safe for concurrent use.
type Intake struct {
	secret         []byte
	maxBody        int64
	handler        engine.JobEventHandler
	log            *slog.Logger
	processTimeout time.Duration
}

// New checks opts and builds an Intake.
func New(opts Options) (*Intake, error) {
	switch {
	case len(opts.Secret) == 0:
		return nil, errors.New("webhook: a webhook secret is required (unsigned webhooks are never accepted)")
	case opts.Handler == nil:
		return nil, errors.New("webhook: Options.Handler is required")
	case opts.MaxBodyBytes < 0:
		return nil, fmt.Errorf("webhook: MaxBodyBytes must not be negative, got %d", opts.MaxBodyBytes)
	}
	in := &Intake{
		secret:         append([]byte(nil), opts.Secret...),
		maxBody:        opts.MaxBodyBytes,
		handler:        opts.Handler,
		log:            opts.Logger,
		processTimeout: opts.ProcessTimeout,
	}
	if in.maxBody == 0 {
		in.maxBody = DefaultMaxBodyBytes
	}
	if in.log == nil {
		in.log = slog.Default()
	}
	if in.processTimeout <= 0 {
		in.processTimeout = DefaultProcessTimeout
	}
	return in, nil
}

// MaxBodyBytes is the largest body Handle accepts.
func (in *Intake) MaxBodyBytes() int64 { return in.maxBody }

// Request is one webhook delivery, independent of transport. Body is the raw
// bytes exactly as sent (a Lambda adapter must base64-decode first), because
// the signature covers those bytes. Build Headers from a flat map with
// HeadersFromMap.
type Request struct {
	Headers http.Header
	Body    []byte
}

// delivery names a request in replies and log lines.
type delivery struct {
	id    string
	event string
}

// Handle answers one delivery. Checks run cheapest and least trusting first:
// size, signature, event, content type, delivery id, payload; only then is
// state touched (the engine).
func (in *Intake) Handle(ctx context.Context, req Request) Response {
	d := delivery{id: req.Headers.Get(DeliveryHeader), event: req.Headers.Get(EventHeader)}

	if size := int64(len(req.Body)); size > in.maxBody {
		return in.rejected(ctx, d, tooLarge(in.maxBody))
	}
	if err := VerifySignature(in.secret, req.Body, req.Headers.Get(SignatureHeader)); err != nil {
		return in.rejected(ctx, d, reject(http.StatusUnauthorized, err.Error()))
	}
	switch d.event {
	case "":
		return in.rejected(ctx, d, reject(http.StatusBadRequest, EventHeader+" header is missing"))
	case EventPing:
		in.log.InfoContext(ctx, "webhook ping", "delivery_id", d.id, "event", d.event)
		return newResponse(http.StatusOK, Reply{Status: StatusPong, Message: "pong", DeliveryID: d.id, Event: d.event})
	case EventWorkflowJob:
	default:
		in.log.InfoContext(ctx, "webhook event ignored", "delivery_id", d.id, "event", d.event)
		return newResponse(http.StatusOK, Reply{
			Status: StatusIgnored, DeliveryID: d.id, Event: d.event,
			Message: fmt.Sprintf("event %q is not acted on; only %s is", d.event, EventWorkflowJob),
		})
	}
	payload, rej := decodePayload(req.Headers.Get("Content-Type"), req.Body)
	if rej != nil {
		return in.rejected(ctx, d, rej)
	}
	if d.id == "" {
		return in.rejected(ctx, d, reject(http.StatusBadRequest, DeliveryHeader+" header is missing"))
	}
	ev, err := ParseWorkflowJob(payload)
	if err != nil {
		return in.rejected(ctx, d, reject(http.StatusBadRequest, err.Error()))
	}
	return in.process(ctx, d, ev)
}

// process runs the engine. It continues if the caller goes away: GitHub
// gives up after 10 s and never retries on its own, so work abandoned at a
// disconnect would be lost until someone redelivers.
func (in *Intake) process(parent context.Context, d delivery, ev *WorkflowJobEvent) Response {
	ctx, cancel := in.processContext(parent)
	defer cancel()
	job := ev.WorkflowJob.ID
	out, err := in.handler.HandleJobEvent(ctx, ev.JobEvent(), engine.Webhook(d.id))
	if err != nil {
		in.log.ErrorContext(ctx, "webhook processing failed",
			"delivery_id", d.id, "event", d.event, "action", ev.Action, "job_id", job,
			"status", http.StatusInternalServerError, "error", err)
		return newResponse(http.StatusInternalServerError, Reply{
			Status: StatusFailed, DeliveryID: d.id, Event: d.event, JobID: job,
			Message: fmt.Sprintf("processing failed; redeliver to retry: %v", err),
		})
	}
	in.log.InfoContext(ctx, "webhook processed",
		"delivery_id", d.id, "event", d.event, "action", out.Action, "job_id", job,
		"run_attempt", ev.WorkflowJob.RunAttempt, "result", out.Result, "instance", out.Instance, "pool", out.Pool)
	return newResponse(http.StatusOK, Reply{
		Status: StatusProcessed, DeliveryID: d.id, Event: d.event, JobID: job,
		Message: fmt.Sprintf("workflow_job %s: %s", ev.Action, out.Result), Outcome: &out,
	})
}

// processContext keeps the parent's values and deadline (on Lambda the
// deadline is the function's own timeout, past which nothing runs anyway)
// but not its cancellation, and caps the work at processTimeout.
func (in *Intake) processContext(parent context.Context) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(in.processTimeout)
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return context.WithDeadline(context.WithoutCancel(parent), deadline)
}

// rejected answers bad input; it never touches state.
func (in *Intake) rejected(ctx context.Context, d delivery, r *rejection) Response {
	in.log.WarnContext(ctx, "webhook rejected",
		"delivery_id", d.id, "event", d.event, "reason", r.reason, "status", r.status)
	return newResponse(r.status, Reply{Status: StatusRejected, Message: r.reason, DeliveryID: d.id, Event: d.event})
}

func tooLarge(limit int64) *rejection {
	return reject(http.StatusRequestEntityTooLarge, fmt.Sprintf("body is larger than the %d-byte limit", limit))
}
