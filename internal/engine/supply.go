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

// Supply follows demand: an open job has at most one live instance made for
// it, and when that instance ends for any reason while the job is still
// open, another is made — with backoff, for as long as the job is queued.

// scaleUpRetryMax caps how long a job waiting for pool capacity sleeps
// between tries, so a slot freed by a delete is taken within seconds rather
// than after the 5-minute delete backoff cap.
const scaleUpRetryMax = 15 * time.Second

// supplyCall says who asks supply to serve a job, which decides what it
// does while the job's backoff runs.
type supplyCall struct {
	// event is the job event that asked, for log lines and the messages
	// sent; zero when the engine asks on its own.
	event EventMeta
	// verify asks GitHub before a replacement; nil on intake.
	verify verifyFunc
	// attempt counts earlier tries while the pool was full.
	attempt int
	// retry is set for a serve_job message: the NextAttemptAt it was sent
	// for. A retry finding the job rescheduled since ends (another retry
	// is on its way); one finding it due serves it.
	retry     bool
	notBefore time.Time
	// schedule asks for a serve_job message at the end of a running
	// backoff (the engine just ended the job's instance); intake and the
	// reconciler leave it to the retry already on its way, or to the
	// reconciler's next pass.
	schedule bool
}

// verifyFunc asks GitHub whether a job whose instance ended is still
// queued. It returns the status the job has moved to ("" when it still
// wants a runner). Job events have none: the ledger never calls GitHub.
type verifyFunc func(ctx context.Context, job *runner.Job) (runner.JobStatus, error)

// covers reports whether inst still serves job: live, not on its way out,
// and not taken by another job (GitHub gives a job to any idle runner whose
// labels cover it, not to the one made for it).
func covers(inst *runner.Instance, job *runner.Job) bool {
	switch {
	case inst == nil || !inst.Status.Live() || inst.Status.PendingDeletion() || inst.Pool != job.Pool:
		return false
	case inst.Status == runner.StatusDeleting || inst.Status == runner.StatusError:
		return false
	case inst.RunnerStatus == runner.RunnerActive && inst.ActiveJobID != 0 && inst.ActiveJobID != job.ID:
		return false
	}
	return true
}

// coveringInstance returns the job's instance if it still serves the job.
func (lg *Ledger) coveringInstance(ctx context.Context, job *runner.Job) (*runner.Instance, error) {
	if job.Instance == "" {
		return nil, nil
	}
	inst, err := lg.store.GetInstance(ctx, job.Instance)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read instance %s: %w", job.Instance, err)
	}
	if !covers(inst, job) {
		return nil, nil
	}
	return inst, nil
}

// supply makes job's next instance if the job wants a runner and nothing
// covers it. A job with Version 0 is not stored yet: it is created in the
// same atomic write as its first instance. attempt counts earlier tries
// while the pool was full (the scale-up backoff).
func (lg *Ledger) supply(ctx context.Context, log *slog.Logger, job *runner.Job, call supplyCall) (Outcome, error) {
	meta, verify, attempt := call.event, call.verify, call.attempt
	key := job.Key()
	out := Outcome{Action: string(runner.ActionQueued), Pool: job.Pool}
	for range maxConflictRetries {
		if job == nil {
			var err error
			if job, err = lg.store.GetJob(ctx, key); err != nil {
				if errors.Is(err, store.ErrJobNotFound) {
					out.Result = ResultIgnored
					return out, nil
				}
				return out, fmt.Errorf("read job %s: %w", key, err)
			}
		}
		if !job.Status.WantsRunner() {
			out.Result = ResultJobSettled
			log.Info("job no longer wants a runner; nothing made", "job_status", job.Status)
			return out, nil
		}
		pool, ok := lg.pool(job.Pool)
		if !ok {
			log.Warn("the job's pool is no longer configured; nothing made", "pool", job.Pool)
			out.Result = ResultNoMatchingPool
			return out, nil
		}
		cover, err := lg.coveringInstance(ctx, job)
		if err != nil {
			return out, err
		}
		if cover != nil {
			out.Instance, out.Result = cover.Name, ResultDuplicate
			return out, lg.resendPendingCreate(ctx, cover, meta)
		}
		now := lg.now()
		if job.NextAttemptAt.After(now) {
			out.Result = ResultBackingOff
			delay := job.NextAttemptAt.Sub(now)
			switch {
			case call.retry && !call.notBefore.Equal(job.NextAttemptAt):
				log.Debug("serve_job retry overtaken by a later one; it ends here")
				return out, nil
			case call.retry || call.schedule:
				if err := lg.send(ctx, serveJobMessage(job, meta, attempt), delay); err != nil {
					return out, fmt.Errorf("enqueue serve_job for %s: %w", key, err)
				}
			}
			log.Info("the job's next instance is made after its backoff", "retry_in", delay.String(), "made", job.Made)
			return out, nil
		}
		if r := refusal(pool, job.Labels); r != nil {
			// Recorded before its pool's policy was narrowed.
			lg.refuse(log, pool.Name, r)
			out.Result, out.Reason = ResultRefused, r.Reason
			return out, lg.parkRefused(ctx, job)
		}
		if verify != nil && job.Made > 0 && job.CheckedMade != job.Made {
			settled, err := verify(ctx, job)
			if err != nil {
				return out, err
			}
			next := job.Clone()
			if settled != "" && settled != job.Status {
				if next, err = job.Transition(settled, now); err != nil {
					return out, err
				}
			}
			next.CheckedMade = job.Made
			next.Version = job.Version
			if err := lg.store.UpdateJob(ctx, job.Status, next); err != nil {
				if errors.Is(err, store.ErrConflict) {
					job = nil
					continue
				}
				return out, fmt.Errorf("record GitHub's answer for job %s: %w", key, err)
			}
			if settled != "" {
				log.Info("GitHub says the job no longer waits for a runner; no replacement", "github_status", settled)
			}
			job = next
			continue
		}

		next := job.Clone()
		next.Made++
		next.Instance = job.InstanceFor(next.Made)
		next.NextAttemptAt = now.Add(lg.backoff(next.Made))
		next.UpdatedAt = now
		inst := lg.newInstance(pool, job, next.Instance)
		out.Instance = inst.Name
		ilog := log.With("instance", inst.Name)
		err = lg.admit(ctx, store.Admission{Instance: inst, MaxRunners: pool.MaxRunners, Job: next, JobFrom: storedStatus(job)}, meta)
		switch {
		case err == nil:
			ilog.Info("instance admitted for job", "status", inst.Status, "made", next.Made)
			out.Result = ResultCreated
			return out, nil
		case errors.Is(err, store.ErrPoolFull):
			// The job records when it is tried next — demand is never only
			// a message, and the one retry sent for that time is the only
			// one: the reconciler and later events leave the job alone
			// until then.
			attempt++
			delay := min(lg.backoff(attempt), scaleUpRetryMax)
			wait := job.Clone()
			wait.NextAttemptAt = now.Add(delay)
			wait.UpdatedAt = now
			if job.Version == 0 {
				err = lg.store.CreateJob(ctx, wait)
			} else {
				wait.Version = job.Version
				err = lg.store.UpdateJob(ctx, job.Status, wait)
			}
			if errors.Is(err, store.ErrJobExists) || errors.Is(err, store.ErrConflict) {
				job = nil
				continue
			}
			if err != nil {
				return out, fmt.Errorf("record job %s waiting for capacity: %w", key, err)
			}
			if err := lg.send(ctx, serveJobMessage(wait, meta, attempt), delay); err != nil {
				return out, fmt.Errorf("enqueue serve_job for %s: %w", key, err)
			}
			ilog.Info("pool at max_runners; job kept for retry", "max_runners", pool.MaxRunners, "retry_in", delay.String(), "attempt", attempt)
			out.Instance, out.Result = "", ResultAwaitingCapacity
			return out, nil
		case errors.Is(err, store.ErrJobExists), errors.Is(err, store.ErrConflict):
			job = nil
			continue
		case errors.Is(err, store.ErrAlreadyExists):
			// An instance by that name exists without the ledger knowing
			// (made by a build before the job ledger): link it.
			link := next.Clone()
			link.NextAttemptAt = job.NextAttemptAt
			if job.Version == 0 {
				err = lg.store.CreateJob(ctx, link)
			} else {
				link.Version = job.Version
				err = lg.store.UpdateJob(ctx, job.Status, link)
			}
			if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrJobExists) {
				return out, fmt.Errorf("link job %s to instance %s: %w", key, link.Instance, err)
			}
			job = nil
			continue
		default:
			return out, fmt.Errorf("admit instance %s: %w", inst.Name, err)
		}
	}
	return out, fmt.Errorf("job %s: gave up after %d conflicting writes", key, maxConflictRetries)
}

// storedStatus is the status an admission compares the stored job with;
// "" for a job not stored yet, which the admission creates.
func storedStatus(job *runner.Job) runner.JobStatus {
	if job.Version == 0 {
		return ""
	}
	return job.Status
}

// newInstance is the pending_create instance named name, made for job.
func (lg *Ledger) newInstance(pool *runner.Pool, job *runner.Job, name string) *runner.Instance {
	now := lg.now()
	inst := &runner.Instance{
		Name:            name,
		Pool:            pool.Name,
		Status:          runner.StatusPendingCreate,
		RunnerStatus:    runner.RunnerPending,
		Owner:           pool.Owner,
		Labels:          pool.RunnerLabels(lg.controllerID),
		CreatedAt:       now,
		UpdatedAt:       now,
		StatusChangedAt: now,
	}
	if job != nil {
		inst.JobID, inst.RunAttempt, inst.InstallationID = job.ID, job.RunAttempt, job.InstallationID
		inst.JobQueuedAt = job.QueuedAt
		inst.Labels = pool.JobRunnerLabels(lg.controllerID, job.Labels)
	}
	return inst
}

// admit writes an admission and enqueues its create. A store that keeps the
// queue (store.Outbox) does both in one commit; otherwise the message
// follows the write, and if it is lost in between the reconciler re-sends
// it. The store's errors are returned unwrapped, for errors.Is.
func (lg *Ledger) admit(ctx context.Context, a store.Admission, meta EventMeta) error {
	msg := createMessage(a.Instance, meta)
	outbox, ok := lg.store.(store.Outbox)
	if !ok {
		if err := lg.store.CreateInstance(ctx, a); err != nil {
			return err
		}
		if err := lg.send(ctx, msg, 0); err != nil {
			return fmt.Errorf("enqueue create for %s: %w", a.Instance.Name, err)
		}
		return nil
	}
	body, err := EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode create for %s: %w", a.Instance.Name, err)
	}
	return outbox.CreateInstanceAndSend(ctx, a, body)
}

// resendPendingCreate re-sends the create of an instance still waiting for
// it: the write that admitted it may have been followed by a lost send (a
// store without an outbox). The worker's compare-and-set admits one create.
func (lg *Ledger) resendPendingCreate(ctx context.Context, inst *runner.Instance, meta EventMeta) error {
	if inst.Status != runner.StatusPendingCreate {
		return nil
	}
	if _, ok := lg.store.(store.Outbox); ok {
		return nil
	}
	if err := lg.send(ctx, createMessage(inst, meta), 0); err != nil {
		return fmt.Errorf("re-enqueue create for %s: %w", inst.Name, err)
	}
	return nil
}
