package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// ReconcileReport counts what one reconcile pass did.
type ReconcileReport struct {
	Examined        int `json:"examined"`
	CreatesResent   int `json:"creates_resent"`
	DeletesResent   int `json:"deletes_resent"`
	StuckCreating   int `json:"stuck_creating_recovered"`
	StuckDeleting   int `json:"stuck_deleting_recovered"`
	ErrorsScheduled int `json:"errors_scheduled"`
	// Found by comparing the provider's and GitHub's lists with the store.
	OrphanMachinesDeleted int `json:"orphan_machines_deleted"`
	OrphanRunnersRemoved  int `json:"orphan_runners_removed"`
	UnneededScheduled     int `json:"unneeded_scheduled"`
	// NotBusyFirstSeen counts active runners GitHub showed not busy for the
	// first time (a confirmation window starts); FinishedReaped those
	// confirmed and scheduled for delete.
	NotBusyFirstSeen int `json:"not_busy_first_seen"`
	FinishedReaped   int `json:"finished_reaped"`
	// From the job ledger: open jobs examined, served again (their instance
	// had ended) and expired (queued longer than GitHub keeps them).
	OpenJobs    int `json:"open_jobs"`
	JobsServed  int `json:"jobs_served"`
	JobsExpired int `json:"jobs_expired"`
	// WaitingRechecked counts jobs long waiting for approval that GitHub
	// was asked about.
	WaitingRechecked int `json:"waiting_rechecked"`
	// StaleRechecked counts open jobs GitHub was asked about because their
	// runner sat online past the bootstrap timeout without taking them.
	StaleRechecked int `json:"stale_rechecked"`
	// WarmCreated counts runners created to keep pools at min_idle (or
	// the warm size decided for a pool with a queue-time target).
	WarmCreated int `json:"warm_created"`
	// Warm is the warm size decided for each pool with a queue-time
	// target (pools[].warm), with the forecast it came from.
	Warm []WarmSize `json:"warm,omitempty"`
	// Interrupted counts instances newly found on machines their provider
	// took back (spot interruptions, polled).
	Interrupted int `json:"interrupted,omitempty"`
	// DeliveriesRecovered counts lost webhook deliveries read back from
	// GitHub's delivery log and handed to the intake;
	// DeliveriesUnrecoverable those that could not be (gone from the log,
	// a payload the intake refuses).
	DeliveriesRecovered     int `json:"deliveries_recovered"`
	DeliveriesUnrecoverable int `json:"deliveries_unrecoverable"`
	// Live is the live set the pass started from, by pool and status.
	Live []LiveCount `json:"live"`
}

// DefaultTakeoverGrace is Options.TakeoverGrace's default: how long past
// its due time a pending instance may sit before the reconciler assumes
// its queue message was lost and re-sends it (always safe: workers admit
// one claimant by compare-and-set), and how long past its worker's bound a
// creating or deleting instance waits before it is recovered.
const DefaultTakeoverGrace = time.Minute

// Reconcile walks the live instances (never the deleted history) and
// restarts whatever a crash, a lost message or a hung call left behind:
// pending work with no message, creating past the bootstrap timeout (P6),
// deleting past the provider timeout (P12), error without a delete. Then it
// compares the provider's machines and GitHub's runners with the live set
// (reconcileOutside).
func (e *Engine) Reconcile(ctx context.Context) (ReconcileReport, error) {
	var rep ReconcileReport
	start := e.now()
	defer func() { e.observer.ReconcilePassed(rep, e.now().Sub(start)) }()
	// First, so what a lost delivery asks for is in the live set the rest
	// of the pass works from. Its failure does not stop the pass.
	deliveriesErr := e.recoverDeliveries(ctx, &rep)
	live, err := e.store.ListLiveInstances(ctx)
	if err != nil {
		return rep, errors.Join(deliveriesErr, fmt.Errorf("list live instances: %w", err))
	}
	now := e.now()
	rep.Live = CountLive(live)
	errs := []error{deliveriesErr}
	// Before the walk: a machine taken back must be known as interrupted
	// before anything treats its instance as merely failed.
	if err := e.pollInterruptions(ctx, &rep); err != nil {
		errs = append(errs, err)
	}
	e.reportBreakers(ctx)
	// Before the walk and the outside comparison: the idle-surplus rule
	// keeps each pool's warm size, so it must be this pass's.
	if err := e.decideWarm(ctx, live, now, &rep); err != nil {
		errs = append(errs, err)
	}
	for _, inst := range live {
		rep.Examined++
		log := e.log.With("instance", inst.Name, "pool", inst.Pool, "job_id", inst.JobID, "reconciler", true)
		if err := e.reconcileOne(ctx, log, inst, now, &rep); err != nil {
			errs = append(errs, err)
		}
	}
	if err := e.reconcileOutside(ctx, live, now, &rep); err != nil {
		errs = append(errs, err)
	}
	if err := e.reconcileJobs(ctx, live, now, &rep); err != nil {
		errs = append(errs, err)
	}
	if err := e.topUpWarmPools(ctx, &rep); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, e.refillWarmMachines(ctx))
	return rep, errors.Join(errs...)
}

func (e *Engine) reconcileOne(ctx context.Context, log *slog.Logger, inst *runner.Instance, now time.Time, rep *ReconcileReport) error {
	due := inst.StatusChangedAt
	if inst.NextAttemptAt.After(due) {
		due = inst.NextAttemptAt
	}
	grace := e.opts.TakeoverGrace
	overdue := now.Sub(due) > grace
	switch inst.Status {
	case runner.StatusPendingCreate:
		if overdue {
			rep.CreatesResent++
			log.Info("re-sending create presumed lost")
			return e.send(ctx, createMessage(inst, EventMeta{}), 0)
		}
	case runner.StatusPendingDelete, runner.StatusPendingForceDelete:
		if overdue {
			rep.DeletesResent++
			log.Info("re-sending delete presumed lost", "status", inst.Status)
			return e.send(ctx, deleteMessage(inst, EventMeta{}, inst.Attempts), 0)
		}
	case runner.StatusCreating:
		if now.Sub(inst.StatusChangedAt) > e.creatingTakeover(inst.Pool) {
			rep.StuckCreating++
			log.Warn("instance stuck in creating past its worker's bound; recovering")
			return e.recoverCreating(ctx, log, inst, "reconciler")
		}
	case runner.StatusDeleting:
		if now.Sub(inst.StatusChangedAt) > e.providerTimeout(inst.Pool)+grace {
			rep.StuckDeleting++
			log.Warn("instance stuck in deleting; recovering")
			return e.recoverDeleting(ctx, log, inst)
		}
	case runner.StatusError:
		if overdue {
			rep.ErrorsScheduled++
			return e.scheduleDelete(ctx, log, inst.Name, EventMeta{}, "")
		}
	}
	return nil
}

// resendPending re-sends a pending instance's work, due when its backoff
// says.
func (e *Engine) resendPending(ctx context.Context, inst *runner.Instance) error {
	delay := max(inst.NextAttemptAt.Sub(e.now()), 0)
	if inst.Status == runner.StatusPendingCreate {
		return e.send(ctx, createMessage(inst, EventMeta{}), delay)
	}
	return e.send(ctx, deleteMessage(inst, EventMeta{}, inst.Attempts), delay)
}

// recoverDeleting returns a deleting instance whose worker died to the
// pending state it came from (P12), and re-sends its delete.
func (e *Engine) recoverDeleting(ctx context.Context, log *slog.Logger, inst *runner.Instance) error {
	next, won, err := e.mutateFrom(ctx, inst.Name, inst, func(cur *runner.Instance) (*runner.Instance, error) {
		if cur.Status != runner.StatusDeleting || cur.Version != inst.Version {
			return nil, errNoChange
		}
		return cur.Transition(runner.StatusPendingDelete, e.now())
	})
	if err != nil || !won {
		return err
	}
	log.Info("deleting instance returned to pending_delete")
	return e.send(ctx, deleteMessage(next, EventMeta{}, next.Attempts), 0)
}

// creatingTimeout is how long an instance may stay in creating before its
// worker is presumed dead: no worker outlives CreatingTimeout when it is set
// (the Lambda worker's function timeout), else the pool's bootstrap
// timeout bounds the provider's create.
func (e *Engine) creatingTimeout(pool string) time.Duration {
	if e.opts.CreatingTimeout > 0 {
		return e.opts.CreatingTimeout
	}
	if p, ok := e.pool(pool); ok {
		return p.BootstrapTimeout
	}
	return e.opts.ProviderTimeout
}

// creatingTakeover is how long an instance may stay creating before the
// reconciler takes its create over: its worker's bound plus the takeover
// grace. runfleet why states the moment it gives.
func (e *Engine) creatingTakeover(pool string) time.Duration {
	return e.creatingTimeout(pool) + e.opts.TakeoverGrace
}

// CreatingTakeover is creatingTakeover as o sets it, for a process that
// builds no engine (the Lambda operator function): known, ok, only when
// o.CreatingTimeout bounds every worker, whatever the pool.
func (o Options) CreatingTakeover() (takeover time.Duration, ok bool) {
	if o.CreatingTimeout <= 0 {
		return 0, false
	}
	grace := o.TakeoverGrace
	if grace <= 0 {
		grace = DefaultTakeoverGrace
	}
	return o.CreatingTimeout + grace, true
}

// recoverCreating takes over a create whose worker died: the machine it may
// have made is deleted (by name, then every machine of that name the pool
// lists), its JIT runner removed, and the create retried or the instance
// ended — exactly as a create that failed.
func (e *Engine) recoverCreating(ctx context.Context, log *slog.Logger, inst *runner.Instance, stage string) error {
	return e.createFailed(ctx, log, inst, createFailure{
		cause:           fmt.Errorf("its worker stopped while creating (since %s)", inst.StatusChangedAt.UTC().Format(time.RFC3339)),
		stage:           stage,
		runnerID:        inst.GitHubRunnerID,
		machineMayExist: true,
		providerID:      inst.ProviderID,
	})
}

// RecoverAtStart finishes what a crashed process left in flight:
// LeftInFlight, then the Recovery's Run, with no worker started before it
// returns (tests, and any caller that can wait).
func (e *Engine) RecoverAtStart(ctx context.Context) error {
	r, err := e.LeftInFlight(ctx)
	if err != nil {
		return err
	}
	return r.Run(ctx)
}

// Recovery is what a crashed process left in flight, as read at start.
type Recovery struct {
	e    *Engine
	live []*runner.Instance
}

// LeftInFlight reads what a crashed predecessor left in flight. Call it
// before this process's workers start; Run may then go on beside them.
//
// It assumes that one process owns the store: the caller, and no other
// process, has workers over it (`runfleet serve` on bolt, whose file lock
// it holds). Only then does every instance found creating or deleting have
// no worker, every error no delete scheduled, and pending work perhaps no
// message, so that each is recovered at once rather than after its
// timeout. On a store several processes share (the Lambda functions,
// serve replicas) another process may be creating or deleting right now:
// do not call it there; the reconciler's timeouts recover a dead
// process's work.
//
// Read after the workers start, it would also find creates and deletes
// this process's own workers just claimed, and "recover" them under a
// live worker: the create retried beside a machine still being made — two
// machines under one name (FINDINGS O4). What it read before any worker
// ran is the dead process's alone: a new claim makes a new attempt (a
// create) or needs a pending status (a delete), so Run never takes over
// a live worker's claim.
func (e *Engine) LeftInFlight(ctx context.Context) (*Recovery, error) {
	live, err := e.store.ListLiveInstances(ctx)
	if err != nil {
		return nil, fmt.Errorf("list live instances: %w", err)
	}
	return &Recovery{e: e, live: live}, nil
}

// Run recovers each instance LeftInFlight found in flight.
func (r *Recovery) Run(ctx context.Context) error {
	e := r.e
	var errs []error
	for _, inst := range r.live {
		log := e.log.With("instance", inst.Name, "pool", inst.Pool, "job_id", inst.JobID, "recovery", true)
		switch inst.Status {
		case runner.StatusCreating:
			log.Warn("instance was creating when runfleet stopped; recovering")
			errs = append(errs, e.recoverCreating(ctx, log, inst, "restart"))
		case runner.StatusDeleting:
			log.Warn("instance was deleting when runfleet stopped; recovering")
			errs = append(errs, e.recoverDeleting(ctx, log, inst))
		case runner.StatusError:
			// The process died between marking the failure and scheduling
			// the delete.
			errs = append(errs, e.scheduleDelete(ctx, log, inst.Name, EventMeta{}, ""))
		case runner.StatusPendingCreate, runner.StatusPendingDelete, runner.StatusPendingForceDelete:
			// Its message may have died with the process (a status write
			// and its send are two steps where the store is not the queue).
			// A second message is harmless: workers claim by compare-and-set.
			errs = append(errs, e.resendPending(ctx, inst))
		}
	}
	return errors.Join(errs...)
}
