// Package engine holds runfleet's use cases: what happens on each
// workflow_job webhook, how workers create and delete instances, force
// delete for operators, and reconciliation. It depends only on ports.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/events"
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/providers"
)

// Options are the engine's dependencies and tunables.
type Options struct {
	// ControllerID identifies this runfleet installation. Every runner it
	// registers carries the label ControllerLabel(ControllerID), so
	// reconciliation never touches runners another controller made.
	ControllerID string

	Store  store.Store
	Queue  queue.Queue
	GitHub github.GitHub
	// Providers maps each pool name to its provider.
	Providers map[string]providers.Provider
	Pools     []config.Pool
	Logger    *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time

	DeleteBackoffMin  time.Duration // default 1s
	DeleteBackoffMax  time.Duration // default 5m
	MaxCreateAttempts int           // default 3
	// ProviderTimeout bounds every provider call but create, which the
	// pool's bootstrap timeout bounds. Default 5m.
	ProviderTimeout time.Duration
	// MetadataURL and CallbackURL are the bases of the runner bootstrap
	// endpoints; with InstanceToken set, providers get them with the
	// instance name appended (InstanceURL), see bootstrap.go.
	MetadataURL string
	CallbackURL string
	// InstanceToken mints the token a booting machine uses against the
	// metadata endpoints; nil means no token is issued (and no runner
	// credentials are stored).
	InstanceToken func(inst, pool string, createAttempt int, ttl time.Duration) (string, error)
}

// Engine runs runfleet's use cases over its ports. It is safe for
// concurrent use: all coordination goes through conditional store writes.
type Engine struct {
	store     store.Store
	queue     queue.Queue
	github    github.GitHub
	providers map[string]providers.Provider
	pools     *config.Config
	log       *slog.Logger
	now       func() time.Time
	opts      Options
	tools     toolsCache // runner downloads per owner (tools.go)
}

// New checks the options and applies defaults.
func New(opts Options) (*Engine, error) {
	switch {
	case opts.Store == nil:
		return nil, errors.New("engine: no store")
	case opts.Queue == nil:
		return nil, errors.New("engine: no queue")
	case opts.GitHub == nil:
		return nil, errors.New("engine: no GitHub client")
	}
	for _, p := range opts.Pools {
		if opts.Providers[p.Name] == nil {
			return nil, fmt.Errorf("engine: pool %q has no provider", p.Name)
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.DeleteBackoffMin <= 0 {
		opts.DeleteBackoffMin = time.Second
	}
	if opts.DeleteBackoffMax <= 0 {
		opts.DeleteBackoffMax = 5 * time.Minute
	}
	if opts.MaxCreateAttempts <= 0 {
		opts.MaxCreateAttempts = 3
	}
	if opts.ProviderTimeout <= 0 {
		opts.ProviderTimeout = 5 * time.Minute
	}
	return &Engine{
		store:     opts.Store,
		queue:     opts.Queue,
		github:    opts.GitHub,
		providers: opts.Providers,
		pools:     &config.Config{Pools: opts.Pools},
		log:       opts.Logger,
		now:       opts.Now,
		opts:      opts,
	}, nil
}

// Outcome says what the engine did with one webhook.
type Outcome struct {
	Action   string `json:"action"`
	Result   string `json:"result"`
	Instance string `json:"instance,omitempty"`
	Pool     string `json:"pool,omitempty"`
}

// Results an Outcome can carry.
const (
	ResultCreated          = "instance_created"
	ResultDuplicate        = "duplicate"
	ResultNoMatchingPool   = "no_matching_pool"
	ResultAwaitingCapacity = "awaiting_capacity"
	ResultBound            = "runner_bound"
	ResultDeleteScheduled  = "delete_scheduled"
	ResultRecorded         = "recorded"
	ResultIgnored          = "ignored"
)

// WorkflowJobHandler is what webhook intake needs from the engine.
type WorkflowJobHandler interface {
	OnWorkflowJob(ctx context.Context, deliveryID string, ev *events.WorkflowJobEvent) (Outcome, error)
}

var _ WorkflowJobHandler = (*Engine)(nil)

// ControllerLabel is the runner label that marks runners registered by the
// controller with this id.
func ControllerLabel(controllerID string) string {
	if controllerID == "" {
		return ""
	}
	return "runfleet-controller-" + controllerID
}

// pool returns the configured pool by name.
func (e *Engine) pool(name string) (*config.Pool, bool) {
	for i := range e.pools.Pools {
		if e.pools.Pools[i].Name == name {
			return &e.pools.Pools[i], true
		}
	}
	return nil, false
}

// backoff is the delay before retry number attempt (1-based): min doubling
// up to max.
func (e *Engine) backoff(attempt int) time.Duration {
	d := e.opts.DeleteBackoffMin
	for i := 1; i < attempt && d < e.opts.DeleteBackoffMax; i++ {
		d *= 2
	}
	return min(d, e.opts.DeleteBackoffMax)
}

// GetInstance returns one instance (store.ErrNotFound if there is none).
func (e *Engine) GetInstance(ctx context.Context, name string) (*runner.Instance, error) {
	return e.store.GetInstance(ctx, name)
}

// ListInstances returns the live instances, of one pool when pool != "".
func (e *Engine) ListInstances(ctx context.Context, pool string) ([]*runner.Instance, error) {
	if pool != "" {
		return e.store.ListInstancesByPool(ctx, pool)
	}
	return e.store.ListLiveInstances(ctx)
}
