package engine

import (
	"context"
	"errors"
	"fmt"
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
		if !job.Status.WantsRunner() || covers(byName[job.Instance], job) || job.NextAttemptAt.After(now) {
			continue
		}
		if job.Instance != "" && byName[job.Instance] == nil {
			// Admitted after the live set was read? supply re-reads it.
			log = log.With("instance", job.Instance)
		}
		rep.JobsServed++
		if _, err := e.supply(ctx, log, job, "", e.stillQueued, 0); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
