package sim

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/providers"
)

// Controller is one incarnation of the runfleet process as the simulation
// drives it: what `runfleet serve` does with a webhook, a queue message, a
// reconcile tick and a start. The engine is adapted to it in engine.go; the
// simulation's own tests also drive deliberately naive controllers through
// it, to show that the invariants catch what they claim to catch.
type Controller interface {
	// HandleJobEvent applies one job event (a webhook delivery:
	// engine.Webhook); nil means GitHub got a 2xx.
	HandleJobEvent(ctx context.Context, ev runner.JobEvent, meta engine.EventMeta) (result string, err error)
	// HandleMessage does one message's work and says whether to
	// acknowledge it (done, or malformed and to be dropped); id is the
	// message's, the same on each of its deliveries, and receive which
	// delivery this is (engine.WithDelivery).
	HandleMessage(ctx context.Context, id string, receive int, body []byte) (ack bool, err error)
	Reconcile(ctx context.Context) error
	// LeftInFlight runs once after every start, before any other work,
	// and reads what the process's predecessor left in flight; the
	// recovery it returns then runs beside the workers, webhooks and
	// reconcile passes, as serve runs it (engine.Engine.LeftInFlight).
	LeftInFlight(ctx context.Context) (recover func(context.Context) error, err error)
}

// InterruptionHandler is a Controller that takes a provider's word that it
// is taking a machine back (EventBridge's spot interruption warning, on
// AWS). Optional: a controller without it only learns of interruptions by
// polling its providers. warnedAt is the warning's time (EventBridge's
// event time).
type InterruptionHandler interface {
	HandleInterruption(ctx context.Context, providerID string, warnedAt time.Time) (result string, err error)
}

// Deps are what a Controller is built from at each start: the ports (the
// simulation's crash-injecting wrappers around the real store and queue,
// its GitHub and its providers) and the pools.
type Deps struct {
	ControllerID string
	Store        store.Store
	Queue        queue.Queue
	GitHub       github.GitHub
	Providers    map[string]providers.Provider
	Pools        runner.Pools
	Now          func() time.Time
	Logger       *slog.Logger
	// ProviderTimeout is what the simulation's hung provider calls wait
	// for before they fail: the controller must use the same.
	ProviderTimeout time.Duration
	// Backoff bounds, smaller in the real-time (DynamoDB + SQS) run.
	BackoffMin, BackoffMax time.Duration
	// Rand is the seeded source for whatever the controller names at
	// random (warm runners).
	Rand io.Reader
}

// NewController builds a Controller at each (re)start.
type NewController func(ctx context.Context, deps Deps) (Controller, error)
