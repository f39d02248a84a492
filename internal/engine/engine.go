// Package engine holds runfleet's use cases over its ports, split by what
// they need: intake (what each job event changes: store + queue + pools,
// Intake), the operator's deletes (+ GitHub, Operator, forcedelete.go) and
// work (creating and deleting instances, serving the job ledger,
// reconciling: + GitHub + providers, Engine). It never sees the config
// format, an adapter or GitHub's payload.
package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/providers"
)

// Options are the engine's dependencies and tunables.
type Options struct {
	// ControllerID identifies this runfleet installation in GitHub: every
	// runner it registers carries runner.ControllerLabel(ControllerID).
	ControllerID string
	// InstallationID is the store's installation id
	// (store.Store.InstallationID); with it each pool gets its
	// provider-side id (runner.PoolID). Pools whose ID is already set keep it.
	InstallationID string

	Store  store.Store
	Queue  queue.Queue
	GitHub github.GitHub
	// Providers maps each pool name to its provider.
	Providers map[string]providers.Provider
	Pools     runner.Pools
	Logger    *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
	// Rand names warm runners (min_idle); default crypto/rand. A seeded
	// source makes a simulation replay exactly.
	Rand io.Reader

	// DeleteBackoffMin/Max bound the delay between a failed delete and its
	// retry, and between the instances made for one job (default 1s, 5m).
	DeleteBackoffMin time.Duration
	DeleteBackoffMax time.Duration
	// MaxCreateAttempts bounds how often one instance's create is retried
	// under the same name (default 3); the job ledger then makes another
	// instance, under a new name, for as long as the job is queued.
	MaxCreateAttempts int
	// ProviderTimeout bounds provider calls other than create for pools that
	// set none. Default 5m.
	ProviderTimeout time.Duration
	// CreatingTimeout is how long an instance may stay in creating before
	// the reconciler treats its worker as dead; zero means the pool's
	// bootstrap timeout. On Lambda it is the worker function's timeout: no
	// worker outlives that.
	CreatingTimeout time.Duration
	// ConfirmWindow is how far apart two "not busy" readings of an active
	// runner must be before it is reaped (default 30s).
	ConfirmWindow time.Duration
	// MetadataURL and CallbackURL are the bases of the runner bootstrap
	// endpoints; with InstanceToken set, providers get them with the
	// instance name appended (InstanceURL), see bootstrap.go.
	MetadataURL string
	CallbackURL string
	// InstanceToken mints the token a booting machine uses against the
	// metadata endpoints; nil means no token is issued (and no runner
	// credentials are stored).
	InstanceToken func(inst, pool string, createAttempt int, ttl time.Duration) (string, error)
	// Deliveries, when set, makes each reconcile pass recover the
	// webhook deliveries GitHub failed to make (reconcile_deliveries.go).
	// Nil when there is no delivery log to read (token auth).
	Deliveries *DeliveryRecovery
	// Memory, when set, is shared with other engines (see Memory); nil
	// gives this engine its own.
	Memory *Memory
	// Observer hears what the engine did, for metrics and the status page;
	// default NopObserver.
	Observer Observer
}

// Engine runs runfleet's use cases over its ports. It is safe for
// concurrent use: all coordination goes through conditional store writes.
type Engine struct {
	*Operator
	providers map[string]providers.Provider
	opts      Options
	memory    *Memory
	// deliveries is Options.Deliveries with its defaults; nil = off.
	deliveries *DeliveryRecovery
}

// Memory is what an engine keeps between uses that would cost a call to
// fetch again: each owner's runner downloads (downloads.go) and each
// pool's spot breaker reading (spotbreaker.go). Options.Memory lets
// engines built one after another — one per Lambda invocation, for its
// logger — share it, so a warm execution environment does not ask GitHub
// for the downloads on every create.
type Memory struct {
	downloads downloadsCache
	breakers  breakerCache
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{} }

// New checks the options and applies defaults.
func New(opts Options) (*Engine, error) {
	if opts.GitHub == nil {
		return nil, errors.New("engine: no GitHub client")
	}
	for _, p := range opts.Pools {
		if opts.Providers[p.Name] == nil {
			return nil, fmt.Errorf("engine: pool %q has no provider", p.Name)
		}
	}
	if opts.MaxCreateAttempts <= 0 {
		opts.MaxCreateAttempts = 3
	}
	if opts.ProviderTimeout <= 0 {
		opts.ProviderTimeout = 5 * time.Minute
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	if opts.ConfirmWindow <= 0 {
		opts.ConfirmWindow = 30 * time.Second
	}
	intake, err := NewIntake(IntakeOptions{
		ControllerID:     opts.ControllerID,
		InstallationID:   opts.InstallationID,
		Store:            opts.Store,
		Queue:            opts.Queue,
		Pools:            opts.Pools,
		Logger:           opts.Logger,
		Now:              opts.Now,
		DeleteBackoffMin: opts.DeleteBackoffMin,
		DeleteBackoffMax: opts.DeleteBackoffMax,
		Observer:         opts.Observer,
	})
	if err != nil {
		return nil, err
	}
	opts.Pools = intake.pools
	if opts.Memory == nil {
		opts.Memory = NewMemory()
	}
	var deliveries *DeliveryRecovery
	if opts.Deliveries != nil {
		if deliveries, err = opts.Deliveries.withDefaults(); err != nil {
			return nil, err
		}
	}
	return &Engine{
		Operator:   &Operator{Intake: intake, github: opts.GitHub},
		providers:  opts.Providers,
		opts:       opts,
		memory:     opts.Memory,
		deliveries: deliveries,
	}, nil
}

// Outcome says what the engine did with one job event.
type Outcome struct {
	Action   string `json:"action"`
	Result   string `json:"result"`
	Instance string `json:"instance,omitempty"`
	Pool     string `json:"pool,omitempty"`
	// Reason says why, for a result that has one: a shape refusal's
	// runner.Refused* reason.
	Reason string `json:"reason,omitempty"`
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
	// ResultJobSettled: the job was served, closed or expired already, so
	// the event makes nothing (a late or redelivered queued).
	ResultJobSettled = "job_settled"
	// ResultBackingOff: the job's last instance ended a moment ago; the
	// next is made when its backoff is over.
	ResultBackingOff = "backing_off"
)

// providerTimeout bounds a pool's provider calls other than create.
func (e *Engine) providerTimeout(pool string) time.Duration {
	if p, ok := e.pools.Get(pool); ok && p.ProviderTimeout > 0 {
		return p.ProviderTimeout
	}
	return e.opts.ProviderTimeout
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

// ListOpenJobs returns the jobs still waiting for a runner (or for
// approval), oldest first.
func (e *Engine) ListOpenJobs(ctx context.Context) ([]*runner.Job, error) {
	return e.store.ListOpenJobs(ctx)
}
