package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
)

// BusyError is returned to an operator who asked for an ordinary delete of
// a runner GitHub reports as running a job.
type BusyError struct{ Instance string }

func (e *BusyError) Error() string {
	return fmt.Sprintf("instance %q: its runner is running a job; wait for the job to finish or delete with force", e.Instance)
}

// Unwrap lets errors.Is(err, github.ErrRunnerBusy) match.
func (e *BusyError) Unwrap() error { return github.ErrRunnerBusy }

// DeleteMode says how hard an operator's delete is.
type DeleteMode bool

const (
	// Graceful refuses a runner GitHub reports busy and retries failures.
	Graceful DeleteMode = false
	// Forced completes whatever GitHub or the provider say, recording
	// their faults on the instance.
	Forced DeleteMode = true
)

// RequestDelete is the operator's ordinary delete: from ANY live state — a
// stuck creating or deleting included — the instance goes to
// pending_delete. The runner is removed from GitHub first; if GitHub says it
// is busy the operator gets a *BusyError at once.
func (r *Registrar) RequestDelete(ctx context.Context, name string) (*runner.Instance, error) {
	return r.OperatorDelete(ctx, name, Graceful)
}

// ForceDelete is the operator's forced delete: the instance goes to
// pending_force_delete from any live state, which completes even if GitHub
// or the provider keeps failing (the fault is recorded on the instance),
// and a busy runner does not stop it.
func (r *Registrar) ForceDelete(ctx context.Context, name string) (*runner.Instance, error) {
	return r.OperatorDelete(ctx, name, Forced)
}

// OperatorDelete is RequestDelete or ForceDelete, as mode says: for the
// transports (HTTP API, Lambda) that receive the choice as data.
func (r *Registrar) OperatorDelete(ctx context.Context, name string, mode DeleteMode) (*runner.Instance, error) {
	force := mode == Forced
	log := r.log.With("instance", name, "force", force, "operator", true)
	inst, err := r.store.GetInstance(ctx, name)
	if err != nil {
		return nil, err
	}
	log = log.With("pool", inst.Pool, "job_id", inst.JobID)
	if !inst.Status.Live() {
		return inst, nil
	}
	if inst.GitHubRunnerID != 0 {
		err := r.removeRunner(ctx, inst)
		switch {
		case errors.Is(err, github.ErrRunnerBusy) && !force:
			log.Warn("operator delete refused: runner is busy")
			return inst, &BusyError{Instance: name}
		case errors.Is(err, github.ErrRunnerBusy):
			// What --force is for: the delete worker asks GitHub again, and
			// warns once, on the record too, that it went on without it.
			log.Info("runner is busy; the forced delete goes on regardless")
		case err != nil:
			// The delete worker asks GitHub again (and, forced, goes on
			// whatever it answers).
			log.Warn("removing the runner from GitHub failed; the delete worker tries again", "error", err)
		}
	}
	target := runner.StatusPendingDelete
	if force {
		target = runner.StatusPendingForceDelete
	}
	next, _, err := r.mutateFrom(ctx, name, inst, func(cur *runner.Instance) (*runner.Instance, error) {
		if !cur.Status.Live() || cur.Status == target || cur.Status == runner.StatusPendingForceDelete {
			return nil, errNoChange
		}
		next, err := cur.Transition(target, r.now())
		if err != nil {
			return nil, err
		}
		next.Attempts = 0
		next.NextAttemptAt = r.now()
		return next, nil
	})
	if err != nil {
		return nil, fmt.Errorf("mark %s for delete: %w", name, err)
	}
	if next.Status.PendingDeletion() {
		// Sent even when the status was already pending: a retrying delete's
		// delayed message is overtaken and the operator sees it happen now.
		if err := r.send(ctx, deleteMessage(next, EventMeta{}, next.Attempts), 0); err != nil {
			return next, fmt.Errorf("enqueue delete for %s: %w", name, err)
		}
	}
	log.Info("operator delete accepted", "status", next.Status)
	return next, nil
}
