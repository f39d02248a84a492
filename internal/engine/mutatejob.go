package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// settleJob records what GitHub says happened to a job: it moves the
// job to status (served, closed, waiting …) from wherever the table allows,
// creating the record when there is none yet — an event that arrives
// before the job's queued must still stop that queued from making a
// runner. A job already final, or already in status, is left as it is.
func (lg *Ledger) settleJob(ctx context.Context, pool *runner.Pool, ev runner.JobEvent, status runner.JobStatus) (*runner.Job, error) {
	key := runner.JobKey(ev.JobID, ev.RunAttempt)
	for range maxConflictRetries {
		job, _, err := lg.mutateJob(ctx, key, nil, func(cur *runner.Job) (*runner.Job, error) {
			if cur.Status == status || cur.Status.Final() || !runner.CanJobTransition(cur.Status, status) ||
				staleJobEvent(cur, ev) != "" {
				return nil, errNoChange
			}
			next, err := cur.Transition(status, lg.now())
			if err != nil {
				return nil, err
			}
			if ev.RunnerName != "" {
				next.RunnerName = ev.RunnerName
			}
			if ev.Conclusion != "" {
				next.Conclusion = ev.Conclusion
			}
			if !ev.CompletedAt.IsZero() {
				next.CompletedAt = ev.CompletedAt
			}
			if status == runner.JobRerun && next.Interrupted == "" {
				next.Interrupted = ev.RunnerName
			}
			noteScaleSetNews(next, ev)
			return next, nil
		})
		if !errors.Is(err, store.ErrJobNotFound) {
			return job, err
		}
		job = lg.newJob(pool, ev, status)
		job.CompletedAt = ev.CompletedAt
		if status == runner.JobRerun {
			job.Interrupted = ev.RunnerName
		}
		err = lg.store.CreateJob(ctx, job)
		if errors.Is(err, store.ErrJobExists) {
			continue
		}
		return job, err
	}
	return nil, fmt.Errorf("job %s: gave up after %d conflicting writes", key, maxConflictRetries)
}
