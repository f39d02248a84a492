package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// reconcileJobs walks open demand, oldest first, and serves every job that
// nothing covers once its backoff is over: a lost serve_job message, an
// instance that ended while its job was still queued, a crash between
// recording a job and admitting its instance. A job queued longer than
// GitHub keeps jobs is expired. Its cost follows open jobs, never history,
// and it asks GitHub nothing about a job that is covered.
func (e *Engine) reconcileJobs(ctx context.Context, live []*runner.Instance, now time.Time, rep *ReconcileReport) error {
	jobs, err := e.store.ListOpenJobs(ctx)
	if err != nil {
		return fmt.Errorf("list open jobs: %w", err)
	}
	byName := make(map[string]*runner.Instance, len(live))
	for _, inst := range live {
		byName[inst.Name] = inst
	}
	var errs []error
	for _, job := range jobs {
		rep.OpenJobs++
		log := e.log.With("job_id", job.ID, "run_attempt", job.RunAttempt, "pool", job.Pool, "reconciler", true)
		if now.Sub(job.QueuedAt) > runner.QueueLimit {
			_, changed, err := e.mutateJob(ctx, job.Key(), job, func(cur *runner.Job) (*runner.Job, error) {
				if cur.Status.Final() || !runner.CanJobTransition(cur.Status, runner.JobExpired) {
					return nil, errNoChange
				}
				return cur.Transition(runner.JobExpired, now)
			})
			if err != nil {
				errs = append(errs, err)
			} else if changed {
				rep.JobsExpired++
				log.Warn("job queued longer than GitHub keeps jobs; demand expired", "queued_at", job.QueuedAt)
			}
			continue
		}
		if job.Status == runner.JobWaiting || job.Status == runner.JobUnmatched {
			if now.Sub(job.UpdatedAt) > waitingRecheck {
				rep.WaitingRechecked++
				if err := e.recheckWaiting(ctx, log, job, now); err != nil {
					errs = append(errs, err)
				}
			}
			continue
		}
		if inst := byName[job.Instance]; covers(inst, job) {
			if e.coveredTooLong(job, inst, now) {
				rep.StaleRechecked++
				if err := e.recheckCovered(ctx, log, job); err != nil {
					errs = append(errs, err)
				}
			}
			continue
		}
		if !job.Status.WantsRunner() || job.NextAttemptAt.After(now) {
			continue
		}
		if job.Instance != "" && byName[job.Instance] == nil {
			// Admitted after the live set was read? supply re-reads it.
			log = log.With("instance", job.Instance)
		}
		rep.JobsServed++
		if _, err := e.supply(ctx, log, job, supplyCall{verify: e.stillQueued}); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// waitingRecheck is how often GitHub is asked about a job that has been
// waiting for approval, or unmatched, that long: a completed (or a queued)
// that was never delivered must not leave it held until it expires.
const waitingRecheck = 10 * time.Minute

// recheckWaiting asks GitHub about a job long held — waiting for approval,
// or unmatched — and records its answer (heldAnswer): still held (the
// clock restarts), queued again (open: served like any open job), started
// or finished.
func (e *Engine) recheckWaiting(ctx context.Context, log *slog.Logger, job *runner.Job, now time.Time) error {
	answer, err := e.stillQueued(ctx, job)
	if err != nil {
		return err
	}
	to := heldAnswer(job.Status, answer.Status)
	if !askableByREST(job) {
		// GitHub was not asked: no answer is not "queued again". It stays
		// held (the clock restarts); a scale set's JobAssigned reopens
		// it, the listener's statistics close it (F24).
		to = job.Status
	}
	_, changed, err := e.mutateJob(ctx, job.Key(), job, func(cur *runner.Job) (*runner.Job, error) {
		if cur.Status != job.Status || cur.Version != job.Version {
			return nil, errNoChange
		}
		next, err := cur.Transition(to, now)
		if err != nil {
			return nil, err
		}
		answer.recordRunner(next)
		next.UpdatedAt = now
		return next, nil
	})
	if err == nil && changed && to != job.Status {
		log.Info("GitHub says the held job moved on", "was", job.Status, "job_status", to)
	}
	return err
}

// heldAnswer is where GitHub's answer about a held job takes it. A job
// waiting for approval that GitHub has queued again (its queued lost) is
// open; an unmatched job stays unmatched while GitHub holds it (queued or
// waiting) — no pool can serve it — and settles once GitHub says it
// started on another runner or completed.
func heldAnswer(from, github runner.JobStatus) runner.JobStatus {
	switch {
	case from == runner.JobUnmatched && (github == runner.JobServed || github == runner.JobClosed):
		return github
	case from == runner.JobUnmatched:
		return runner.JobUnmatched
	case github == "":
		return runner.JobOpen
	}
	return github
}

// coveredTooLong reports whether an open job has had an online-capable
// runner of its own longer than its pool's bootstrap timeout without
// GitHub giving the job to it: GitHub hands a queued job to any idle
// runner that covers it, so the job has most likely started elsewhere or
// ended, and its in_progress or completed was lost. GitHub is asked once
// per instance made for the job (CheckedMade), never again for the same one.
func (e *Engine) coveredTooLong(job *runner.Job, inst *runner.Instance, now time.Time) bool {
	pool, ok := e.pool(job.Pool)
	if !ok || !job.Status.WantsRunner() || inst.Status != runner.StatusRunning || job.CheckedMade == job.Made {
		return false
	}
	since := job.QueuedAt
	if inst.StatusChangedAt.After(since) {
		since = inst.StatusChangedAt
	}
	return now.Sub(since) > pool.BootstrapTimeout
}

// recheckCovered asks GitHub about such a job and records the answer.
func (e *Engine) recheckCovered(ctx context.Context, log *slog.Logger, job *runner.Job) error {
	answer, err := e.stillQueued(ctx, job)
	if err != nil {
		return err
	}
	settled := answer.Status
	_, changed, err := e.mutateJob(ctx, job.Key(), job, func(cur *runner.Job) (*runner.Job, error) {
		if cur.Version != job.Version || !cur.Status.WantsRunner() {
			return nil, errNoChange
		}
		next := cur.Clone()
		if settled != "" && settled != cur.Status {
			if next, err = cur.Transition(settled, e.now()); err != nil {
				return nil, err
			}
		}
		answer.recordRunner(next)
		next.CheckedMade = cur.Made
		return next, nil
	})
	if err == nil && changed && settled != "" {
		log.Info("GitHub says the job no longer waits for a runner", "job_status", settled)
	}
	return err
}
