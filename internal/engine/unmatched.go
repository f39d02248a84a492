package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// A queued job no pool matches used to be one INFO log line. It is
// recorded instead (runner.JobUnmatched) with why, so jobs list, the
// status page, metrics and runfleet why show it: a label typo is the most
// common misconfiguration there is. No runner is made for it, and the
// delivery is answered 2xx as before — GitHub redelivering it would not
// change the config.

// onUnmatched records a queued job no pool serves. A job that is not
// runfleet's (ubuntu-latest, runner.Pools.Mismatch) is only logged, as
// before; a job already recorded is left as it is.
func (lg *Ledger) onUnmatched(ctx context.Context, log *slog.Logger, meta EventMeta, ev runner.JobEvent) (Outcome, error) {
	out := Outcome{Action: string(ev.Action), Result: ResultNoMatchingPool}
	m, meant := lg.pools.Mismatch(ev.Repository, ev.Org, ev.Enterprise, ev.Labels)
	if !meant {
		log.Info("no pool serves this job's owner and labels; not a job for runfleet's runners", "labels", ev.Labels, "repository", ev.Repository)
		return out, nil
	}
	out.Reason = m.Reason
	job := lg.newJob(&runner.Pool{}, ev, runner.JobUnmatched)
	// The job's organization (or user) authenticates the reconciler's
	// question to GitHub about it (is it still queued?); no pool is its owner.
	job.Owner = runner.Owner{Org: accountOf(ev)}
	job.UnmatchedReason, job.UnmatchedDetail = m.Reason, m.Detail
	job.Delivery, job.DeliverySource = meta.Key, string(meta.Source)
	err := lg.store.CreateJob(ctx, job)
	switch {
	case errors.Is(err, store.ErrJobExists):
		return out, nil
	case err != nil:
		return out, fmt.Errorf("record unmatched job %s: %w", job.Key(), err)
	}
	log.Warn("no pool serves this job; recorded as unmatched", "labels", ev.Labels, "repository", ev.Repository,
		"reason", m.Reason, "detail", m.Detail)
	return out, nil
}

// matchUnmatched opens an unmatched job that pool now serves (the config
// was fixed while GitHub still held the job): it gets the pool, and then
// its runner like any open job. Anything else is returned as read.
func (lg *Ledger) matchUnmatched(ctx context.Context, log *slog.Logger, pool *runner.Pool, job *runner.Job) (*runner.Job, error) {
	if job.Status != runner.JobUnmatched {
		return job, nil
	}
	next, changed, err := lg.mutateJob(ctx, job.Key(), job, func(cur *runner.Job) (*runner.Job, error) {
		if cur.Status != runner.JobUnmatched {
			return nil, errNoChange
		}
		next, err := cur.Transition(runner.JobOpen, lg.now())
		if err != nil {
			return nil, err
		}
		next.Pool, next.Owner = pool.Name, pool.Owner
		return next, nil
	})
	if err != nil {
		return nil, fmt.Errorf("open unmatched job %s: %w", job.Key(), err)
	}
	if changed {
		log.Info("a pool serves the unmatched job now; opened", "was", job.UnmatchedDetail)
	}
	return next, nil
}

// settleUnmatched moves an unmatched job to status when GitHub reports it
// started (on a runner runfleet does not manage) or completed; there is
// nothing else to do for a job no pool matches.
func (lg *Ledger) settleUnmatched(ctx context.Context, ev runner.JobEvent, status runner.JobStatus) error {
	_, _, err := lg.mutateJob(ctx, runner.JobKey(ev.JobID, ev.RunAttempt), nil, func(cur *runner.Job) (*runner.Job, error) {
		if cur.Status != runner.JobUnmatched {
			return nil, errNoChange
		}
		next, err := cur.Transition(status, lg.now())
		if err != nil {
			return nil, err
		}
		next.RunnerName, next.Conclusion, next.CompletedAt = ev.RunnerName, ev.Conclusion, ev.CompletedAt
		return next, nil
	})
	if errors.Is(err, store.ErrJobNotFound) {
		return nil
	}
	return err
}

// accountOf is the account the job's repository belongs to.
func accountOf(ev runner.JobEvent) string {
	if ev.Org != "" {
		return ev.Org
	}
	account, _, _ := strings.Cut(ev.Repository, "/")
	return account
}
