package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// mutateJob is mutate for the job ledger: read the job (or start from one
// just read), ask decide for its next version, write it with a
// compare-and-set, and on a lost race re-read and decide again. It returns
// the job as written, or as last read when decide returned errNoChange.
func (in *Intake) mutateJob(ctx context.Context, key string, known *runner.Job, decide func(cur *runner.Job) (*runner.Job, error)) (*runner.Job, bool, error) {
	for range maxConflictRetries {
		cur := known
		known = nil
		if cur == nil {
			var err error
			if cur, err = in.store.GetJob(ctx, key); err != nil {
				return nil, false, err
			}
		}
		next, err := decide(cur)
		if errors.Is(err, errNoChange) {
			return cur, false, nil
		}
		if err != nil {
			return cur, false, err
		}
		next.Version = cur.Version
		if err := in.store.UpdateJob(ctx, cur.Status, next); err != nil {
			if errors.Is(err, store.ErrConflict) {
				continue
			}
			return cur, false, err
		}
		return next, true, nil
	}
	return nil, false, fmt.Errorf("job %s: gave up after %d conflicting writes", key, maxConflictRetries)
}

// settleJob records what GitHub says happened to a job: it moves the
// job to status (served, closed, waiting …) from wherever the table allows,
// creating the record when there is none yet — an event that arrives
// before the job's queued must still stop that queued from making a
// runner. A job already final, or already in status, is left as it is.
func (in *Intake) settleJob(ctx context.Context, pool *runner.Pool, ev runner.JobEvent, status runner.JobStatus) (*runner.Job, error) {
	key := runner.JobKey(ev.JobID, ev.RunAttempt)
	for range maxConflictRetries {
		job, _, err := in.mutateJob(ctx, key, nil, func(cur *runner.Job) (*runner.Job, error) {
			if cur.Status == status || cur.Status.Final() || !runner.CanJobTransition(cur.Status, status) {
				return nil, errNoChange
			}
			next, err := cur.Transition(status, in.now())
			if err != nil {
				return nil, err
			}
			if ev.RunnerName != "" {
				next.RunnerName = ev.RunnerName
			}
			if ev.Conclusion != "" {
				next.Conclusion = ev.Conclusion
			}
			return next, nil
		})
		if !errors.Is(err, store.ErrJobNotFound) {
			return job, err
		}
		job = in.newJob(pool, ev, status)
		err = in.store.CreateJob(ctx, job)
		if errors.Is(err, store.ErrJobExists) {
			continue
		}
		return job, err
	}
	return nil, fmt.Errorf("job %s: gave up after %d conflicting writes", key, maxConflictRetries)
}
