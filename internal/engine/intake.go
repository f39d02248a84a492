package engine

import (
	"context"

	"github.com/runfleet/runfleet/internal/runner"
)

// JobEventHandler is what an intake transport (the webhook) needs.
type JobEventHandler interface {
	OnWorkflowJob(ctx context.Context, deliveryID string, ev runner.JobEvent) (Outcome, error)
}

var _ JobEventHandler = (*Ledger)(nil)

// OnWorkflowJob applies one job event.
func (lg *Ledger) OnWorkflowJob(ctx context.Context, deliveryID string, ev runner.JobEvent) (Outcome, error) {
	if ev.RunAttempt < 1 {
		ev.RunAttempt = 1
	}
	log := lg.log.With("delivery_id", deliveryID, "job_id", ev.JobID, "run_attempt", ev.RunAttempt, "action", string(ev.Action))
	pool, matched := lg.pools.Match(ev.Repository, ev.Org, ev.Enterprise, ev.Labels)
	if matched {
		log = log.With("pool", pool.Name)
	}
	switch ev.Action {
	case runner.ActionQueued:
		if !matched {
			log.Info("no pool serves this job's owner and labels", "labels", ev.Labels, "repository", ev.Repository)
			return Outcome{Action: string(ev.Action), Result: ResultNoMatchingPool}, nil
		}
		return lg.onQueued(ctx, log, deliveryID, pool, ev)
	case runner.ActionWaiting:
		return lg.onWaiting(ctx, log, pool, matched, ev)
	case runner.ActionInProgress:
		return lg.onInProgress(ctx, log, pool, matched, ev)
	case runner.ActionCompleted:
		return lg.onCompleted(ctx, log, deliveryID, pool, matched, ev)
	default:
		log.Info("workflow_job action not acted on")
		return Outcome{Action: string(ev.Action), Result: ResultIgnored}, nil
	}
}

// newJob is the ledger record for a job event's job in pool, in status.
func (lg *Ledger) newJob(pool *runner.Pool, ev runner.JobEvent, status runner.JobStatus) *runner.Job {
	now := lg.now()
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
