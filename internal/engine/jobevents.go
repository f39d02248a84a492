package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// onQueued opens demand: a job seen for the first time is recorded with its
// first instance in one atomic write; a job waiting for approval is opened
// again (and, if its runner was reaped meanwhile, gets a new one); a job
// already served, closed or expired makes nothing, however late its queued
// arrives.
func (lg *Ledger) onQueued(ctx context.Context, log *slog.Logger, meta EventMeta, pool *runner.Pool, ev runner.JobEvent) (Outcome, error) {
	key := runner.JobKey(ev.JobID, ev.RunAttempt)
	out := Outcome{Action: string(ev.Action), Pool: pool.Name}
	// A shape the pool refuses is bad input: nothing is recorded, so the
	// reconciler never serves it and a redelivery is refused the same way.
	if r := refusal(pool, ev.Labels); r != nil {
		lg.refuse(log, pool.Name, r)
		out.Result, out.Reason = ResultRefused, r.Reason
		return out, nil
	}
	job, err := lg.store.GetJob(ctx, key)
	switch {
	case errors.Is(err, store.ErrJobNotFound):
		job := lg.newJob(pool, ev, runner.JobOpen)
		job.Delivery, job.DeliverySource = meta.Key, string(meta.Source)
		return lg.supply(ctx, log, job, supplyCall{event: meta})
	case err != nil:
		return out, fmt.Errorf("read job %s: %w", key, err)
	}
	if job, err = lg.matchUnmatched(ctx, log, pool, job); err != nil {
		return out, err
	}
	if job.Status == runner.JobWaiting {
		job, _, err = lg.mutateJob(ctx, key, job, func(cur *runner.Job) (*runner.Job, error) {
			if cur.Status != runner.JobWaiting {
				return nil, errNoChange
			}
			return cur.Transition(runner.JobOpen, lg.now())
		})
		if err != nil {
			return out, fmt.Errorf("reopen job %s: %w", key, err)
		}
		log.Info("job queued again after waiting")
	}
	return lg.supply(ctx, log, job, supplyCall{event: meta})
}

// onWaiting pauses demand while an environment's protection rules hold the
// job: no runner is made for it until it is queued again.
func (lg *Ledger) onWaiting(ctx context.Context, log *slog.Logger, pool *runner.Pool, matched bool, ev runner.JobEvent) (Outcome, error) {
	out := Outcome{Action: string(ev.Action), Result: ResultRecorded}
	if !matched {
		return out, nil
	}
	out.Pool = pool.Name
	// Recorded waiting, a refused job would be opened by the reconciler's
	// recheck; it is refused here as on queued.
	if r := refusal(pool, ev.Labels); r != nil {
		lg.refuse(log, pool.Name, r)
		out.Result, out.Reason = ResultRefused, r.Reason
		return out, nil
	}
	if _, err := lg.settleJob(ctx, pool, ev, runner.JobWaiting); err != nil {
		return out, fmt.Errorf("record job %d waiting: %w", ev.JobID, err)
	}
	log.Info("job waiting for approval; no runner until it is queued again")
	return out, nil
}

// onInProgress settles demand (the job is served, whichever runner took
// it) and binds the runner that took it, if it is ours.
func (lg *Ledger) onInProgress(ctx context.Context, log *slog.Logger, pool *runner.Pool, matched bool, ev runner.JobEvent) (Outcome, error) {
	out := Outcome{Action: string(ev.Action), Result: ResultIgnored}
	var job *runner.Job
	if matched {
		var err error
		if job, err = lg.settleJob(ctx, pool, ev, runner.JobServed); err != nil {
			return out, fmt.Errorf("record job %d served: %w", ev.JobID, err)
		}
		out.Pool = pool.Name
	}
	name := ev.RunnerName
	log = log.With("instance", name)
	taken, err := lg.ourInstance(ctx, name)
	if err != nil {
		return out, fmt.Errorf("read instance %s: %w", name, err)
	}
	if taken == nil {
		log.Info("job taken by a runner runfleet does not manage")
		return out, nil
	}
	out.Instance, out.Pool = taken.Name, taken.Pool
	if lg.otherIntake(taken, ev) {
		log.Info("in_progress about a scale-set pool's runner from outside its scale set; the instance is not bound (its listener reports its jobs)")
		return out, nil
	}
	if earlierRegistration(taken, ev) {
		log.Info("in_progress names an earlier registration of this runner name (a create retried since); the instance is not bound",
			"github_runner_id", taken.GitHubRunnerID, "event_runner_id", ev.RunnerID)
		return out, nil
	}
	bound, changed, err := lg.mutateFrom(ctx, name, taken, func(cur *runner.Instance) (*runner.Instance, error) {
		// An instance on its way out keeps its status: binding it would only
		// race the delete worker's compare-and-set.
		if !cur.Status.Live() || cur.Status.PendingDeletion() || cur.Status == runner.StatusDeleting || earlierRegistration(cur, ev) ||
			cur.RunnerStatus == runner.RunnerActive && cur.ActiveJobID == ev.JobID {
			return nil, errNoChange
		}
		if cur.RunnerStatus == runner.RunnerTerminated {
			// The runner finished a job (ephemeral: it is done); this
			// in_progress arrived after that job's completed. It says which
			// job the runner ran — kept, for an interruption learnt later —
			// but must not make the runner look busy, or its create
			// retryable, again.
			if cur.ActiveJobID != 0 {
				return nil, errNoChange
			}
			next := cur.Clone()
			next.ActiveJobID, next.ActiveRunAttempt, next.UpdatedAt = ev.JobID, ev.RunAttempt, lg.now()
			return next, nil
		}
		next := cur.Clone()
		next.RunnerStatus = runner.RunnerActive
		next.ActiveJobID = ev.JobID
		next.ActiveRunAttempt = ev.RunAttempt
		next.NotBusySince = time.Time{}
		next.UpdatedAt = lg.now()
		return next, nil
	})
	if err != nil {
		return out, fmt.Errorf("bind runner %s to job %d: %w", name, ev.JobID, err)
	}
	out.Result = ResultBound
	if changed {
		log.Info("runner bound to job", "runner_status", bound.RunnerStatus)
		if job != nil && !job.QueuedAt.IsZero() {
			lg.observer.JobWaited(job.Pool, StageStarted, lg.now().Sub(job.QueuedAt))
		}
	}
	if err := lg.handOver(ctx, log, job, bound); err != nil {
		return out, err
	}
	return out, nil
}

// onCompleted closes demand — cancelled or not, a completed job gets no
// machine, even one still waiting for capacity — and schedules the delete
// of the runner that ran it (or, for a job that ended before any runner
// took it, of the instance made for it, unless that one took another job).
func (lg *Ledger) onCompleted(ctx context.Context, log *slog.Logger, meta EventMeta, pool *runner.Pool, matched bool, ev runner.JobEvent) (Outcome, error) {
	out := Outcome{Action: string(ev.Action), Result: ResultIgnored}
	var job *runner.Job
	if matched {
		var err error
		if job, err = lg.settleCompleted(ctx, log, meta, pool, ev); err != nil {
			return out, err
		}
		out.Pool = pool.Name
	}
	name := ev.RunnerName
	runnerless := name == ""
	if runnerless {
		switch {
		case job != nil && job.Instance != "":
			name = job.Instance
		case matched:
			name = runner.InstanceName(pool.Name, ev.JobID, ev.RunAttempt)
		default:
			return out, nil
		}
	}
	log = log.With("instance", name)
	inst, err := lg.ourInstance(ctx, name)
	if err != nil {
		return out, fmt.Errorf("read instance %s: %w", name, err)
	}
	if inst == nil || runnerless && inst.RunnerStatus == runner.RunnerActive {
		log.Info("job completed; no instance of ours to remove")
		return out, nil
	}
	if !runnerless {
		if lg.otherIntake(inst, ev) {
			log.Info("completed about a scale-set pool's runner from outside its scale set; the instance is left alone (its listener reports its jobs)")
			return out, nil
		}
		if earlierRegistration(inst, ev) {
			log.Info("completed names an earlier registration of this runner name (a create retried since); the instance is left alone",
				"github_runner_id", inst.GitHubRunnerID, "event_runner_id", ev.RunnerID)
			return out, nil
		}
		if err := lg.handOver(ctx, log, job, inst); err != nil {
			return out, err
		}
	}
	out.Instance, out.Pool = inst.Name, inst.Pool
	next, changed, err := lg.mutateFrom(ctx, name, inst, func(cur *runner.Instance) (*runner.Instance, error) {
		return jobCompleted(cur, ev.JobID, runnerless, lg.now())
	})
	if err != nil {
		return out, fmt.Errorf("schedule delete of %s: %w", name, err)
	}
	out.Result = ResultDeleteScheduled
	if next.Status == runner.StatusCreating {
		log.Info("job completed while its instance is being created; it is deleted as soon as its machine exists")
		return out, nil
	}
	if next.Status == runner.StatusDeleting {
		// The attempt in flight records its own outcome; if GitHub answers
		// it "busy", the mark written here makes it ask again soon rather
		// than after delete_backoff_max (deleteRetryDelay).
		log.Info("job completed while its instance is being deleted; a busy answer is retried soon", "marked", changed)
		return out, nil
	}
	if !changed && !next.Status.PendingDeletion() {
		log.Info("instance already deleted", "status", next.Status)
		return out, nil
	}
	// Also re-sent when already pending: an earlier attempt may have failed
	// between its write and its send. The worker's compare-and-set admits one.
	if err := lg.send(ctx, deleteMessage(next, meta, 0), 0); err != nil {
		// Recorded as pending_delete: the reconciler re-sends lost deletes.
		return out, fmt.Errorf("enqueue delete for %s: %w", name, err)
	}
	log.Info("job completed; instance scheduled for delete", "status", next.Status)
	return out, nil
}

// settleCompleted records a completed job in the ledger: closed, or owed
// its re-run when an interruption failed it (the re-run message sent).
func (lg *Ledger) settleCompleted(ctx context.Context, log *slog.Logger, meta EventMeta, pool *runner.Pool, ev runner.JobEvent) (*runner.Job, error) {
	status := runner.JobClosed
	interrupted, err := lg.interruptedRun(ctx, log, ev)
	if err != nil {
		return nil, err
	}
	if interrupted {
		status = runner.JobRerun
	}
	job, err := lg.settleJob(ctx, pool, ev, status)
	if err != nil {
		return nil, fmt.Errorf("record job %d %s: %w", ev.JobID, status, err)
	}
	if job.Status == runner.JobRerun {
		// Also re-sent when the job was in rerun already: an earlier
		// delivery may have failed between its write and its send.
		if err := lg.send(ctx, rerunMessage(job, meta), 0); err != nil {
			return nil, fmt.Errorf("enqueue the re-run of job %d: %w", ev.JobID, err)
		}
		log.Info("job failed on an interrupted machine; re-run requested", "instance", job.Interrupted, "conclusion", ev.Conclusion)
	}
	return job, nil
}

// jobCompleted is the instance once job jobID, which it was made for or
// ran, completed: pending_delete, its runner terminated if it ran that job
// (or any, when the event names it: runnerless is false). An instance
// whose create is in flight is only marked terminated: a delete now would
// find no machine yet, free the slot, and the create would then make one;
// the create hands the machine to the delete path once it exists.
// errNoChange when it is on its way out already.
func jobCompleted(cur *runner.Instance, jobID int64, runnerless bool, now time.Time) (*runner.Instance, error) {
	if cur.Status.PendingDeletion() || !cur.Status.Live() {
		return nil, errNoChange
	}
	if cur.Status == runner.StatusCreating || cur.Status == runner.StatusDeleting {
		if cur.RunnerStatus == runner.RunnerTerminated {
			return nil, errNoChange
		}
		if cur.Status == runner.StatusDeleting && !ranJob(cur, jobID, runnerless) {
			return nil, errNoChange
		}
		next := cur.Clone()
		next.RunnerStatus = runner.RunnerTerminated
		next.UpdatedAt = now
		return next, nil
	}
	next, err := cur.Transition(runner.StatusPendingDelete, now)
	if err != nil {
		return nil, err
	}
	if ranJob(cur, jobID, runnerless) {
		next.RunnerStatus = runner.RunnerTerminated
	}
	return next, nil
}

// ranJob: the completed of job jobID is about the runner of cur — the job
// it was seen running, or, when it was seen running none, any job the
// event names it for (runnerless is false).
func ranJob(cur *runner.Instance, jobID int64, runnerless bool) bool {
	return cur.ActiveJobID == jobID || cur.ActiveJobID == 0 && !runnerless
}

// handOver keeps supply with demand when GitHub gave a job to a runner made
// for another job: settled's own instance, now spare, takes over the other
// job, which is still waiting for the runner that was made for it.
func (lg *Ledger) handOver(ctx context.Context, log *slog.Logger, settled *runner.Job, taken *runner.Instance) error {
	if settled == nil || taken == nil || taken.JobID == 0 ||
		taken.JobID == settled.ID && taken.RunAttempt == settled.RunAttempt ||
		settled.Instance == "" || settled.Instance == taken.Name {
		return nil
	}
	spare, err := lg.store.GetInstance(ctx, settled.Instance)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read instance %s: %w", settled.Instance, err)
	}
	if !covers(spare, settled) || spare.RunnerStatus == runner.RunnerActive {
		return nil
	}
	other := runner.JobKey(taken.JobID, taken.RunAttempt)
	_, changed, err := lg.mutateJob(ctx, other, nil, func(cur *runner.Job) (*runner.Job, error) {
		// Only a runner of the job's own pool covers its labels, and only
		// one of its own shape is the machine it asked for.
		if !cur.Status.WantsRunner() || cur.Instance != taken.Name || cur.Pool != spare.Pool ||
			!runner.SameShape(cur.Labels, spare.Labels) {
			return nil, errNoChange
		}
		next := cur.Clone()
		next.Instance = spare.Name
		next.UpdatedAt = lg.now()
		return next, nil
	})
	if errors.Is(err, store.ErrJobNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("hand instance %s over to job %s: %w", spare.Name, other, err)
	}
	if changed {
		log.Info("runner made for another job took this one; that job gets this job's instance", "other_job", other, "spare_instance", spare.Name)
	}
	return nil
}

// ourInstance returns the instance named by a runner name, or nil when the
// runner is not one of ours.
func (lg *Ledger) ourInstance(ctx context.Context, runnerName string) (*runner.Instance, error) {
	if !runner.OursByName(runnerName) {
		return nil, nil
	}
	inst, err := lg.store.GetInstance(ctx, runnerName)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return inst, err
}

// otherIntake reports whether ev names a scale-set pool's runner but did
// not come from that pool's scale set. GitHub also sends webhooks about a
// scale set's jobs, under the REST job id: a second name for a job the
// listener holds under its runner request (F21). Bound by it, the runner
// would look taken by another job, and its own job would get a second
// runner; a scale-set pool's runner takes that scale set's jobs only, so
// only its scale set's events bind and release it.
func (lg *Ledger) otherIntake(inst *runner.Instance, ev runner.JobEvent) bool {
	p, ok := lg.pools.Get(inst.Pool)
	return ok && p.ScaleSet != "" && ev.Pool != inst.Pool
}

// earlierRegistration reports whether ev is about an earlier registration
// of inst's runner name: a create retried after its runner was registered
// (and, maybe, ran a job) registers a new runner under the same name, with
// a new id — a higher one: GitHub numbers runners in the order they are
// registered. Only when both ids are known; an event about a later
// registration than the one recorded (a retried create whose new id is
// not written yet) is the instance's own.
func earlierRegistration(inst *runner.Instance, ev runner.JobEvent) bool {
	return ev.RunnerID != 0 && inst.GitHubRunnerID != 0 && ev.RunnerID < inst.GitHubRunnerID
}
