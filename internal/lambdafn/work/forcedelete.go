package work

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// ForceDeleteHandler is what lambda.Start runs for the ForceDeleteFunction,
// which an operator invokes directly.
type ForceDeleteHandler func(ctx context.Context, input json.RawMessage) (*ForceDeleteResult, error)

// ForceDelete is the ForceDeleteFunction, built from the environment on
// the first invocation.
func ForceDelete() ForceDeleteHandler {
	return NewForceDelete(FromEnvironment(lambdafn.RoleForceDelete), nil)
}

// NewForceDelete is the ForceDeleteFunction with its Options from options;
// a failed start is logged to log (nil: JSON lines on stdout) and returned
// to the operator.
func NewForceDelete(options OptionsFunc, log *slog.Logger) ForceDeleteHandler {
	app := lambdafn.NewLazy(lambdafn.RoleForceDelete, func(ctx context.Context) (*App, error) {
		opts, err := options(ctx)
		if err != nil {
			return nil, err
		}
		return Build(ctx, lambdafn.RoleForceDelete, opts)
	}, log)
	return func(ctx context.Context, input json.RawMessage) (*ForceDeleteResult, error) {
		a, err := app.Get(ctx)
		if err != nil {
			return nil, err
		}
		return a.HandleForceDelete(ctx, input)
	}
}

// ForceDeleteRequest is the ForceDeleteFunction's input:
//
//	aws lambda invoke --function-name <ForceDeleteFunction> \
//	  --cli-binary-format raw-in-base64-out \
//	  --payload '{"name": "runfleet-linux-x64-7000000001-1", "force": true}' out.json
//
// or, to ask why a job waits (runfleet why), with nothing deleted:
//
//	--payload '{"why": "7000000001"}' out.json
//
// The function is the operator's one entry point on AWS, so it answers
// both; a request names one or the other.
type ForceDeleteRequest struct {
	Name  string `json:"name"`
	Force bool   `json:"force"`
	// Why is a job id or its GitHub URL (engine.ParseJobRef).
	Why string `json:"why"`
}

// ForceDeleteResult is its output when the delete was accepted: the
// instance as recorded, typically pending_delete or pending_force_delete
// (the worker finishes the job within seconds).
type ForceDeleteResult struct {
	OK       bool             `json:"ok"`
	Message  string           `json:"message"`
	Instance *runner.Instance `json:"instance"`
	// Why is the job's timeline, for a {"why": JOB} request; Message is
	// then its text, the answer on the first line.
	Why *engine.Timeline `json:"why,omitempty"`
}

// Errors the ForceDeleteFunction returns. Lambda reports a returned error's
// Go type name as errorType, so `aws lambda invoke` shows, beside
// FunctionError: Unhandled, {"errorType": "RunnerBusyError", "errorMessage": …}.

// InvalidInputError: the payload could not be read; nothing was done.
type InvalidInputError struct{ Reason string }

func (e *InvalidInputError) Error() string {
	return `invalid input: ` + e.Reason + `; send {"name": "<instance name>", "force": true|false} or {"why": "<job id or URL>"}`
}

// InstanceNotFoundError: no instance has that name.
type InstanceNotFoundError struct{ Name string }

func (e *InstanceNotFoundError) Error() string {
	return fmt.Sprintf("instance %q not found (names look like runfleet-<pool>-<job id>-<run attempt>)", e.Name)
}

// Unwrap lets errors.Is(err, store.ErrNotFound) match.
func (e *InstanceNotFoundError) Unwrap() error { return store.ErrNotFound }

// RunnerBusyError: GitHub says the instance's runner is running a job, and
// force was not set; nothing was done.
type RunnerBusyError struct{ Busy *engine.BusyError }

func (e *RunnerBusyError) Error() string { return e.Busy.Error() }

// Unwrap lets errors.As find the *engine.BusyError and errors.Is match
// github.ErrRunnerBusy.
func (e *RunnerBusyError) Unwrap() error { return e.Busy }

// ForceDeleteFailedError: the delete could not be recorded or enqueued
// (e.g. DynamoDB or SQS unavailable); invoking again is safe.
type ForceDeleteFailedError struct {
	Name string
	Err  error
}

func (e *ForceDeleteFailedError) Error() string {
	return fmt.Sprintf("delete of instance %q failed, invoke again to retry: %v", e.Name, e.Err)
}

func (e *ForceDeleteFailedError) Unwrap() error { return e.Err }

// HandleForceDelete is the operator's delete (engine.OperatorDelete): from
// any live state, to pending_delete (engine.RequestDelete), or with force
// to pending_force_delete (engine.ForceDelete), which completes even if
// GitHub or the provider keep failing.
func (a *App) HandleForceDelete(ctx context.Context, input json.RawMessage) (*ForceDeleteResult, error) {
	log := a.InvocationLogger(ctx)
	req, err := decodeForceDelete(input)
	if err != nil {
		log.WarnContext(ctx, "force delete refused", "error", err)
		return nil, err
	}
	if req.Why != "" {
		return a.handleWhy(ctx, log, req.Why)
	}
	// The engine adds instance and force to its own lines; only the lines
	// logged here get them from reqLog, so no line carries a key twice.
	eng, err := a.registrar(log)
	reqLog := log.With("instance", req.Name, "force", req.Force)
	if err != nil {
		reqLog.ErrorContext(ctx, "force delete failed: the engine cannot be built", "error", err)
		return nil, &ForceDeleteFailedError{Name: req.Name, Err: err}
	}
	mode := engine.Graceful
	if req.Force {
		mode = engine.Forced
	}
	inst, err := eng.OperatorDelete(ctx, req.Name, mode)
	var busy *engine.BusyError
	switch {
	case errors.Is(err, store.ErrNotFound):
		reqLog.WarnContext(ctx, "force delete of an unknown instance")
		return nil, &InstanceNotFoundError{Name: req.Name}
	case errors.As(err, &busy):
		return nil, &RunnerBusyError{Busy: busy}
	case err != nil:
		reqLog.ErrorContext(ctx, "force delete failed", "error", err)
		return nil, &ForceDeleteFailedError{Name: req.Name, Err: err}
	}
	return &ForceDeleteResult{OK: true, Message: forceDeleteMessage(inst, req.Force), Instance: inst}, nil
}

func forceDeleteMessage(inst *runner.Instance, force bool) string {
	switch {
	case !inst.Status.Live():
		return "instance is already deleted; nothing to do"
	case force:
		return "forced delete scheduled: it completes even if GitHub or the provider keep failing (faults are recorded on the instance)"
	default:
		return "delete scheduled"
	}
}

// decodeForceDelete reads the payload strictly: a misspelt "force" must be
// an error, not a silently ordinary delete.
func decodeForceDelete(input json.RawMessage) (ForceDeleteRequest, error) {
	var req ForceDeleteRequest
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, &InvalidInputError{Reason: err.Error()}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return req, &InvalidInputError{Reason: "trailing data after the JSON object"}
	}
	req.Name, req.Why = strings.TrimSpace(req.Name), strings.TrimSpace(req.Why)
	switch {
	case req.Why != "" && (req.Name != "" || req.Force):
		return req, &InvalidInputError{Reason: `"why" asks about a job and deletes nothing: send it alone`}
	case req.Why != "":
		if _, err := engine.ParseJobRef(req.Why); err != nil {
			return req, &InvalidInputError{Reason: err.Error()}
		}
	case req.Name == "":
		return req, &InvalidInputError{Reason: `"name" is missing`}
	}
	return req, nil
}

// WhyFailedError: the job's records could not be read; invoking again is
// safe.
type WhyFailedError struct {
	Job string
	Err error
}

func (e *WhyFailedError) Error() string {
	return fmt.Sprintf("why job %s: the records could not be read, invoke again to retry: %v", e.Job, e.Err)
}

func (e *WhyFailedError) Unwrap() error { return e.Err }

// handleWhy answers {"why": JOB}: the job's timeline, as runfleet why
// prints it.
func (a *App) handleWhy(ctx context.Context, log *slog.Logger, ref string) (*ForceDeleteResult, error) {
	id, _ := engine.ParseJobRef(ref) // checked by decodeForceDelete
	eng, err := a.registrar(log)
	if err == nil {
		var tl *engine.Timeline
		if takeover, ok := a.engineOptions.CreatingTakeover(); ok {
			tl, err = eng.WhyWithin(ctx, id, takeover)
		} else {
			tl, err = eng.Why(ctx, id)
		}
		if err == nil {
			var text strings.Builder
			_ = tl.Text(&text)
			log.InfoContext(ctx, "why asked", "job_id", id, "reason", tl.Answer.Reason)
			return &ForceDeleteResult{OK: true, Message: text.String(), Why: tl}, nil
		}
	}
	log.ErrorContext(ctx, "why failed", "job_id", id, "error", err)
	return nil, &WhyFailedError{Job: ref, Err: err}
}
