package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// IntakeOptions are what intake needs: the store, the queue and the pools.
// No GitHub client and no provider — an intake can run where neither is
// reachable (the webhook Lambda).
type IntakeOptions struct {
	ControllerID string
	// InstallationID gives each pool its provider-side id (runner.PoolID).
	InstallationID string
	Store          store.Store
	Queue          queue.Queue
	Pools          runner.Pools
	Logger         *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
	// DeleteBackoffMin/Max: see Options.
	DeleteBackoffMin time.Duration
	DeleteBackoffMax time.Duration
	// Observer hears what intake did; nil = NopObserver. Refusals reach it
	// when it implements RefusalObserver.
	Observer Observer
}

// Intake turns what is learned about jobs (job events) into the job ledger
// and the instances that serve it. Every path is idempotent through
// conditional writes: the same event, or the same job through several
// deliveries, in any order, ends with at most one live instance per open
// job (lessons-from-peers P2, P3, P20).
type Intake struct {
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

// JobEventHandler is what an intake transport (the webhook) needs.
type JobEventHandler interface {
	OnWorkflowJob(ctx context.Context, deliveryID string, ev runner.JobEvent) (Outcome, error)
}

var _ JobEventHandler = (*Intake)(nil)

// NewIntake checks the options and applies defaults.
func NewIntake(opts IntakeOptions) (*Intake, error) {
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
	if opts.Observer == nil {
		opts.Observer = NopObserver{}
	}
	pools := make(runner.Pools, len(opts.Pools))
	for i, p := range opts.Pools {
		p.Labels = append([]string(nil), p.Labels...)
		if p.ID == "" {
			p.ID = runner.PoolID(opts.InstallationID, p.Name)
		}
		pools[i] = p
	}
	return &Intake{
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
func (in *Intake) Pools() runner.Pools { return in.pools }

// pool returns the configured pool by name.
func (in *Intake) pool(name string) (*runner.Pool, bool) { return in.pools.Get(name) }

// backoff is the delay before retry number attempt (1-based): min doubling
// up to max.
func (in *Intake) backoff(attempt int) time.Duration {
	d := in.backoffMin
	for i := 1; i < attempt && d < in.backoffMax; i++ {
		d *= 2
	}
	return min(d, in.backoffMax)
}

// OnWorkflowJob applies one job event.
func (in *Intake) OnWorkflowJob(ctx context.Context, deliveryID string, ev runner.JobEvent) (Outcome, error) {
	if ev.RunAttempt < 1 {
		ev.RunAttempt = 1
	}
	log := in.log.With("delivery_id", deliveryID, "job_id", ev.JobID, "run_attempt", ev.RunAttempt, "action", string(ev.Action))
	pool, matched := in.pools.Match(ev.Repository, ev.Org, ev.Enterprise, ev.Labels)
	if matched {
		log = log.With("pool", pool.Name)
	}
	switch ev.Action {
	case runner.ActionQueued:
		if !matched {
			log.Info("no pool serves this job's owner and labels", "labels", ev.Labels, "repository", ev.Repository)
			return Outcome{Action: string(ev.Action), Result: ResultNoMatchingPool}, nil
		}
		return in.onQueued(ctx, log, deliveryID, pool, ev)
	case runner.ActionWaiting:
		return in.onWaiting(ctx, log, pool, matched, ev)
	case runner.ActionInProgress:
		return in.onInProgress(ctx, log, pool, matched, ev)
	case runner.ActionCompleted:
		return in.onCompleted(ctx, log, deliveryID, pool, matched, ev)
	default:
		log.Info("workflow_job action not acted on")
		return Outcome{Action: string(ev.Action), Result: ResultIgnored}, nil
	}
}

// newJob is the ledger record for a job event's job in pool, in status.
func (in *Intake) newJob(pool *runner.Pool, ev runner.JobEvent, status runner.JobStatus) *runner.Job {
	now := in.now()
	return &runner.Job{
		ID:              ev.JobID,
		RunAttempt:      ev.RunAttempt,
		Pool:            pool.Name,
		Owner:           pool.Owner,
		Repository:      ev.Repository,
		InstallationID:  ev.InstallationID,
		Labels:          append([]string(nil), ev.Labels...),
		Status:          status,
		RunnerName:      ev.RunnerName,
		Conclusion:      ev.Conclusion,
		QueuedAt:        now,
		CreatedAt:       now,
		UpdatedAt:       now,
		StatusChangedAt: now,
	}
}
