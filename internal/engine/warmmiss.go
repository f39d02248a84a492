package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/warm"
)

// WarmMiss is `runfleet why`'s account of a job of a pool with a
// queue-time target that waited past it: how many warm runners the
// forecast kept when the job was queued (decided again from the ledger,
// as the reconciler decided it) and how many of the pool's jobs came in
// the minute up to it, which took them.
type WarmMiss struct {
	Waited time.Duration `json:"waited"`
	Target time.Duration `json:"target"`
	Kept   int           `json:"kept"`
	Came   int           `json:"came"`
	// Missed: more came than were kept, so the job found no warm runner
	// left; otherwise the wait was not the forecast's (a runner taken by
	// another job, a slow boot).
	Missed bool `json:"missed"`
}

// Sentence words the miss for the timeline.
func (m WarmMiss) Sentence() string {
	if m.Missed {
		return fmt.Sprintf("it waited %s, past the pool's %s target, because the forecast missed: no warm runner was left — it kept %d, and %d of the pool's jobs came within the minute",
			roughly(m.Waited), m.Target, m.Kept, m.Came)
	}
	return fmt.Sprintf("it waited %s, past the pool's %s target, with warm runners to spare (the forecast kept %d, %d jobs came within the minute): not the forecast — see the instances below",
		roughly(m.Waited), m.Target, m.Kept, m.Came)
}

// DecideWarmMiss is the account for job, of pool, from the pool's arrivals
// (queued times, its own included) as the ledger holds them now and what
// was kept of them past it (warm.Kept); ok is
// false when there is nothing to account for: the pool has no target, or
// the job started (or has waited so far) within it, or its start is not
// known (a closed job's record no longer dates it).
func DecideWarmMiss(pool *runner.Pool, job *runner.Job, kept warm.Kept, arrivals []time.Time, now time.Time) (WarmMiss, bool) {
	if pool == nil || pool.Warm == nil || job == nil || job.QueuedAt.IsZero() {
		return WarmMiss{}, false
	}
	var waited time.Duration
	switch {
	case job.Status == runner.JobServed:
		waited = job.StatusChangedAt.Sub(job.QueuedAt)
	case job.Status.WantsRunner() || job.Status == runner.JobWaiting:
		waited = now.Sub(job.QueuedAt)
	default:
		return WarmMiss{}, false
	}
	if waited <= pool.Warm.Target {
		return WarmMiss{}, false
	}
	var before []time.Time
	m := WarmMiss{Waited: waited, Target: pool.Warm.Target}
	for _, a := range arrivals {
		if a.Before(job.QueuedAt) {
			before = append(before, a)
		}
		if !a.After(job.QueuedAt) && a.After(job.QueuedAt.Add(-time.Minute)) {
			m.Came++
		}
	}
	// How many the forecast kept ready is the same whether they were hot
	// runners or stopped machines, so it is decided as for hot ones.
	h := kept.History(before, job.QueuedAt, keptRules(warm.Defaults()))
	m.Kept = decideWarmSize(pool, h, before, job.QueuedAt, warm.Defaults(), false).Hot
	m.Missed = m.Came > m.Kept
	return m, true
}

// warmMiss reads what DecideWarmMiss needs: the pool's arrivals around the
// job. A store without them (DynamoDB) leaves the account out.
func (lg *Ledger) warmMiss(ctx context.Context, pool *runner.Pool, job *runner.Job, now time.Time) (*WarmMiss, error) {
	src, ok := lg.store.(store.Arrivals)
	if !ok || pool == nil || pool.Warm == nil || job == nil {
		return nil, nil
	}
	byPool, err := src.ListArrivals(ctx, []string{pool.Name}, job.QueuedAt.Add(-warmHistory(warm.Defaults())))
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read pool %s arrivals: %w", pool.Name, err)
	}
	arrivals := byPool[pool.Name]
	// The account only reads what was kept: writing it is the
	// reconciler's.
	kept, _, _ := readKept(ctx, lg.store, pool.Name, lg.log.With("pool", pool.Name, "job_id", job.ID))
	if m, ok := DecideWarmMiss(pool, job, kept, arrivals, now); ok {
		return &m, nil
	}
	return nil, nil
}
