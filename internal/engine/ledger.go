package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// LedgerOptions are what the ledger needs: the store, the queue and the
// pools. No GitHub client and no provider.
type LedgerOptions struct {
	// ControllerID identifies this runfleet installation in GitHub: every
	// runner it registers carries runner.ControllerLabel(ControllerID).
	ControllerID string
	// InstallationID is the store's installation id
	// (store.Store.InstallationID); with it each pool gets its
	// provider-side id (runner.PoolID). Pools whose ID is already set keep it.
	InstallationID string

	Store  store.Store
	Queue  queue.Queue
	Pools  runner.Pools
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
	// DeleteBackoffMin/Max bound the delay between a failed delete and its
	// retry, and between the instances made for one job (default 1s, 5m).
	DeleteBackoffMin time.Duration
	DeleteBackoffMax time.Duration
	// Observer hears what the engine did, for metrics and the status page;
	// default NopObserver. Optional parts (RefusalObserver, SpotObserver)
	// reach it when it implements them.
	Observer Observer
}

// Ledger turns what is learned about jobs (job events) into the job ledger
// and the instances that serve it. Every path is idempotent through
// conditional writes: the same event, or the same job through several
// events, in any order, ends with at most one live instance per open job
// (lessons-from-peers P2, P3, P20).
type Ledger struct {
	store        store.Store
	queue        queue.Queue
	pools        runner.Pools
	controllerID string
	log          *slog.Logger
	now          func() time.Time
	backoffMin   time.Duration
	backoffMax   time.Duration
	observer     Observer
}

// NewLedger checks the options and applies defaults.
func NewLedger(opts LedgerOptions) (*Ledger, error) {
	switch {
	case opts.Store == nil:
		return nil, errors.New("engine: no store")
	case opts.Queue == nil:
		return nil, errors.New("engine: no queue")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Observer == nil {
		opts.Observer = NopObserver{}
	}
	if opts.DeleteBackoffMin <= 0 {
		opts.DeleteBackoffMin = time.Second
	}
	if opts.DeleteBackoffMax <= 0 {
		opts.DeleteBackoffMax = 5 * time.Minute
	}
	pools := make(runner.Pools, len(opts.Pools))
	for i, p := range opts.Pools {
		p.Labels = append([]string(nil), p.Labels...)
		if p.ID == "" {
			p.ID = runner.PoolID(opts.InstallationID, p.Name)
		}
		pools[i] = p
	}
	return &Ledger{
		store:        opts.Store,
		queue:        opts.Queue,
		pools:        pools,
		controllerID: opts.ControllerID,
		log:          opts.Logger,
		now:          opts.Now,
		backoffMin:   opts.DeleteBackoffMin,
		backoffMax:   opts.DeleteBackoffMax,
		observer:     opts.Observer,
	}, nil
}

// Pools returns the pools as the engine runs them (with their ids).
func (lg *Ledger) Pools() runner.Pools { return lg.pools }

// pool returns the configured pool by name.
func (lg *Ledger) pool(name string) (*runner.Pool, bool) { return lg.pools.Get(name) }

// backoff is the delay before retry number attempt (1-based): min doubling
// up to max.
func (lg *Ledger) backoff(attempt int) time.Duration {
	d := lg.backoffMin
	for i := 1; i < attempt && d < lg.backoffMax; i++ {
		d *= 2
	}
	return min(d, lg.backoffMax)
}

// GetInstance returns one instance (store.ErrNotFound if there is none).
func (lg *Ledger) GetInstance(ctx context.Context, name string) (*runner.Instance, error) {
	return lg.store.GetInstance(ctx, name)
}

// ListInstances returns the live instances, of one pool when pool != "".
func (lg *Ledger) ListInstances(ctx context.Context, pool string) ([]*runner.Instance, error) {
	if pool != "" {
		return lg.store.ListInstancesByPool(ctx, pool)
	}
	return lg.store.ListLiveInstances(ctx)
}

// ListOpenJobs returns the jobs still waiting for a runner (or for
// approval), oldest first.
func (lg *Ledger) ListOpenJobs(ctx context.Context) ([]*runner.Job, error) {
	return lg.store.ListOpenJobs(ctx)
}

// OpenDemand is the unsettled demand as one reading: the open jobs, the
// live instances and what each job waits for (runner.MeasureDemand,
// classified at the ledger's now against the configured pools).
type OpenDemand struct {
	Jobs   []*runner.Job
	Live   []*runner.Instance
	Demand runner.Demand
}

// ReadOpenDemand reads the open jobs and the live instances and
// classifies the jobs: what jobs list and the status page show, and the
// same classification runfleet why answers with, so none of them words a
// job's wait differently.
func (lg *Ledger) ReadOpenDemand(ctx context.Context) (OpenDemand, error) {
	live, err := lg.store.ListLiveInstances(ctx)
	if err != nil {
		return OpenDemand{}, fmt.Errorf("list instances: %w", err)
	}
	jobs, err := lg.store.ListOpenJobs(ctx)
	if err != nil {
		return OpenDemand{}, fmt.Errorf("list open jobs: %w", err)
	}
	return OpenDemand{Jobs: jobs, Live: live, Demand: runner.MeasureDemand(jobs, live, lg.pools.MaxRunners(), lg.now())}, nil
}
