package lambdafn

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/telemetry"
	"github.com/runfleet/runfleet/internal/webhook"
)

// BuildFunc builds a function's App; FromEnvironment is the deployed one.
type BuildFunc func(ctx context.Context) (*App, error)

// Function is what lambda.Start runs: it builds its App on the first
// invocation and reuses it while the execution environment stays warm. A
// failed build is never cached: the invocation reports it and the next one
// tries again, so a throttled SSM call or a config fixed in SSM recovers
// without a redeploy (a bad config costs one SSM read per invocation until
// it is fixed, and fails loudly each time).
type Function struct {
	role  Role
	build BuildFunc
	// log reports failed builds, which happen before the App's logger exists.
	log *slog.Logger

	mu  sync.Mutex
	app *App
}

// NewFunction returns a Function for role that builds its App with build.
// Failed builds are logged to log (nil: JSON lines on stdout).
func NewFunction(role Role, build BuildFunc, log *slog.Logger) *Function {
	if log == nil {
		log = telemetry.NewLogger(os.Stdout, slog.LevelInfo)
	}
	return &Function{role: role, build: build, log: log.With("function", string(role))}
}

// App returns the built App, building it first if need be.
func (f *Function) App(ctx context.Context) (*App, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.app != nil {
		return f.app, nil
	}
	app, err := f.build(ctx)
	if err != nil {
		withRequestID(ctx, f.log).ErrorContext(ctx, "function could not start; this invocation fails and the next one tries again", "error", err)
		return nil, err
	}
	f.app = app
	return app, nil
}

// HandleWebhook is the WebhookFunction handler. A function that cannot
// start answers 503, so GitHub's delivery log shows a failure to redeliver;
// the reason is logged, not sent to whoever called the public URL.
func (f *Function) HandleWebhook(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	app, err := f.App(ctx)
	if err != nil {
		return functionURLResponse(http.StatusServiceUnavailable, webhook.Reply{
			Status:  webhook.StatusFailed,
			Message: "runfleet could not start (see the webhook function's logs); nothing was done, redeliver later",
		}), nil
	}
	return app.HandleWebhook(ctx, req)
}

// HandleMetadata is the MetadataFunction handler: runner bootstrap behind
// its own Function URL. A function that cannot start answers 503, which
// GARM's scripts retry.
func (f *Function) HandleMetadata(ctx context.Context, req events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	app, err := f.App(ctx)
	if err != nil {
		return metadataUnavailable("runfleet could not start (see the metadata function's logs); retry"), nil
	}
	return app.HandleMetadata(ctx, req)
}

// HandleSQS is the WorkerFunction handler. A function that cannot start
// fails the whole batch: no record could be handled, and the error shows in
// the function's Errors metric.
func (f *Function) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	app, err := f.App(ctx)
	if err != nil {
		return events.SQSEventResponse{}, err
	}
	return app.HandleSQS(ctx, ev)
}

// HandleForceDelete is the ForceDeleteFunction handler.
func (f *Function) HandleForceDelete(ctx context.Context, input json.RawMessage) (*ForceDeleteResult, error) {
	app, err := f.App(ctx)
	if err != nil {
		return nil, err
	}
	return app.HandleForceDelete(ctx, input)
}

// HandleSchedule is the ReconcilerFunction handler.
func (f *Function) HandleSchedule(ctx context.Context, ev events.EventBridgeEvent) (engine.ReconcileReport, error) {
	app, err := f.App(ctx)
	if err != nil {
		return engine.ReconcileReport{}, err
	}
	return app.HandleSchedule(ctx, ev)
}
