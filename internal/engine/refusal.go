package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/providers"
)

// ResultRefused: the job asks for a machine shape its pool's policy does
// not grant (runner.ShapeRefusal); nothing is made and no demand recorded.
const ResultRefused = "shape_refused"

// RefusalObserver is what an Observer implements to hear refused jobs:
// reason is one of runner.RefusalReasons. Optional, so an Observer written
// before shapes existed still fits.
type RefusalObserver interface {
	JobRefused(pool, reason string)
}

// refusedRecheck is how long a recorded job whose shape its pool now
// refuses (the policy was narrowed after it was queued) waits before supply
// looks at it again: long enough not to log and count the same refusal on
// every reconcile pass, short enough that a policy widened again serves it.
const refusedRecheck = 10 * time.Minute

// refusal returns the job's shape refusal by its pool, or nil when the
// pool grants the shape (or the job asks for none).
func refusal(pool *runner.Pool, jobLabels []string) *runner.ShapeRefusal {
	_, err := pool.GrantShape(jobLabels)
	var refused *runner.ShapeRefusal
	if errors.As(err, &refused) {
		return refused
	}
	return nil
}

// refuse reports a refused job (log already names its pool and job): one
// WARN line an operator, and through the logs a workflow author, can act
// on, and the observer's count. GitHub offers no signal for a queued job
// no runner will take: it stays queued until GitHub cancels it after
// runner.QueueLimit, or its author does.
func (lg *Ledger) refuse(log *slog.Logger, pool string, r *runner.ShapeRefusal) {
	log.Warn("job's machine shape refused by its pool's policy; no runner is made for it", "reason", r.Reason, "detail", r.Detail)
	if o, ok := lg.observer.(RefusalObserver); ok {
		o.JobRefused(pool, r.Reason)
	}
}

// parkRefused records when supply looks again at a recorded open job its
// pool now refuses, so the reconciler does not refuse it on every pass.
// A conflicting write is left to the next pass.
func (lg *Ledger) parkRefused(ctx context.Context, job *runner.Job) error {
	if job.Version == 0 {
		return nil
	}
	now := lg.now()
	next := job.Clone()
	next.NextAttemptAt = now.Add(refusedRecheck)
	next.UpdatedAt = now
	next.Version = job.Version
	if err := lg.store.UpdateJob(ctx, job.Status, next); err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, store.ErrJobNotFound) {
		return err
	}
	return nil
}

// machineShape is what the provider is asked to launch for an instance:
// its shape labels (the job's, see runner.Pool.JobRunnerLabels) granted
// under the pool's policy as it is now. nil = the pool's own machine.
func machineShape(pool *runner.Pool, inst *runner.Instance) (*providers.Shape, error) {
	m, err := pool.GrantShape(inst.Labels)
	if err != nil || m == nil {
		return nil, err
	}
	return m, nil
}

// JobRefused tells each observer that hears refusals.
func (m multiObserver) JobRefused(pool, reason string) {
	for _, o := range m {
		if r, ok := o.(RefusalObserver); ok {
			r.JobRefused(pool, reason)
		}
	}
}

var _ RefusalObserver = multiObserver(nil)
