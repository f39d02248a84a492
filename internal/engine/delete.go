package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/providers"
)

// delete claims a pending_delete or pending_force_delete instance
// (-> deleting), removes its runner from GitHub and its machine from the
// provider, and marks it deleted. An ordinary delete that fails goes back to
// pending_delete and is re-sent after a growing delay; a forced one records
// the fault and completes regardless (lessons-from-peers P8).
func (e *Engine) delete(ctx context.Context, msg Message) error {
	log := withEvent(e.log, msg.event()).With("job_id", msg.JobID, "instance", msg.Instance)
	claimed, forced, log, err := e.claimDelete(ctx, log, msg)
	if err != nil || claimed == nil {
		return err
	}
	// The claim is ours: whatever happens to the caller's deadline, what
	// the calls below did must be recorded, or the instance would wait in
	// deleting for the reconciler's timeout.
	record, cancel := e.cleanupContext(ctx)
	defer cancel()
	log = log.With("forced", forced, "attempts", claimed.Attempts)
	faults, failed := e.removeAll(ctx, record, log, claimed, forced)
	if failed != nil {
		return e.retryDelete(record, log, claimed, msg.event(), failed.err, failed.runnerRemoved)
	}
	return e.markDeleted(record, log, claimed, faults)
}

// claimDelete reads the message's instance and claims its delete; a nil
// instance means there is nothing (more) to do. forced says the claim was
// of a forced delete; the logger returned names the pool.
func (e *Engine) claimDelete(ctx context.Context, log *slog.Logger, msg Message) (claimed *runner.Instance, forced bool, _ *slog.Logger, _ error) {
	inst, err := e.getLive(ctx, msg.Instance)
	if err != nil {
		return nil, false, log, fmt.Errorf("read instance %s: %w", msg.Instance, err)
	}
	if taken, err := e.takeOver(ctx, inst, "delete"); err != nil || taken != nil {
		if err != nil {
			return nil, false, log, err
		}
		// Every step of a delete is safe to repeat: GitHub is asked by
		// runner id (or name), the provider by id (or name), and a gone
		// runner or machine is success. Resumed as an ordinary delete: a
		// failure goes back to pending_delete rather than past a busy
		// runner.
		log = log.With("pool", inst.Pool)
		log.Warn("an earlier try of this message claimed the delete and recorded no outcome; taking it over",
			"claimed_at", inst.StatusChangedAt, "claim", inst.Claim)
		return taken, false, log, nil
	}
	if inst == nil || !inst.Status.PendingDeletion() {
		log.Debug("delete message is stale; nothing to do")
		return nil, false, log, nil
	}
	log = log.With("pool", inst.Pool)
	var claimedFrom runner.Status
	claimed, won, err := e.mutateFrom(ctx, inst.Name, inst, func(cur *runner.Instance) (*runner.Instance, error) {
		if !cur.Status.PendingDeletion() {
			return nil, errNoChange
		}
		claimedFrom = cur.Status
		next, err := cur.Transition(runner.StatusDeleting, e.now())
		if err == nil {
			next.Claim, next.ClaimUntil = claimOf(ctx), claimUntil(ctx, e.now())
		}
		return next, err
	})
	if err != nil {
		return nil, false, log, fmt.Errorf("claim %s for delete: %w", inst.Name, err)
	}
	if !won {
		log.Debug("another worker claimed the delete")
		return nil, false, log, nil
	}
	return claimed, claimedFrom == runner.StatusPendingForceDelete, log, nil
}

// deleteFailure is the step of an ordinary delete that failed, for its
// retry; runnerRemoved says GitHub confirmed the runner gone before it.
type deleteFailure struct {
	err           error
	runnerRemoved bool
}

// removeAll removes a claimed instance's runner, then its machine (and
// any other machine of its name), and sends again the re-run its
// interrupted job may be owed. An ordinary delete stops at the first
// failure; a forced one goes on, and returns the faults to record.
func (e *Engine) removeAll(ctx, record context.Context, log *slog.Logger, claimed *runner.Instance, forced bool) ([]string, *deleteFailure) {
	var faults []string
	if err := e.removeRunner(ctx, claimed); err != nil {
		if !forced {
			return nil, &deleteFailure{err: err}
		}
		faults = append(faults, err.Error())
		log.Warn("forced delete: ignoring GitHub error", "error", err)
	}
	target := claimed.ProviderID
	if target == "" {
		target = claimed.Name
	}
	if err := e.deleteMachine(ctx, claimed.Pool, target); err != nil {
		if !forced {
			return nil, &deleteFailure{err: err, runnerRemoved: true}
		}
		faults = append(faults, providers.Fault(err))
		log.Warn("forced delete: ignoring provider error", "error", err)
	}
	// A delete by name may be a no-op (garm-provider-aws), and a retried
	// create may have left a machine under the same name: unless the one
	// machine is known by its id, the record says deleted only once the
	// pool lists no machine of this name, so a freed slot is a freed machine.
	if claimed.ProviderID == "" || claimed.CreateAttempt > 1 {
		if err := e.sweepMachines(ctx, log, claimed.Pool, claimed.Name, claimed.ProviderID); err != nil {
			if !forced {
				return nil, &deleteFailure{err: err, runnerRemoved: true}
			}
			faults = append(faults, err.Error())
			log.Warn("forced delete: ignoring provider error", "error", err)
		}
	}
	if err := e.rerunOwedBy(record, log, claimed); err != nil {
		if !forced {
			return nil, &deleteFailure{err: err, runnerRemoved: true}
		}
		log.Warn("forced delete: the interrupted job's re-run could not be sent again", "error", err)
	}
	return faults, nil
}

// deleted is the instance once its runner and machine are gone, with the
// faults a forced delete ignored; errNoChange unless it is still being
// deleted. Status, not version: a field update (or another worker's
// reclaim) since the claim does not change that the machine is gone now.
func deleted(cur *runner.Instance, faults []string, now time.Time) (*runner.Instance, error) {
	if cur.Status != runner.StatusDeleting {
		return nil, errNoChange
	}
	next, err := cur.Transition(runner.StatusDeleted, now)
	if err != nil {
		return nil, err
	}
	next.RunnerStatus = runner.RunnerTerminated
	next.ExpiresAt = now.Add(store.DeletedRetention)
	next.NextAttemptAt = time.Time{}
	if len(faults) > 0 {
		next.ProviderFault = errors.Join(errorsOf(faults)...).Error()
	}
	return next, nil
}

// markDeleted records the instance deleted (deleted) and, if it ended
// without finishing a job of its own, serves the job it was made for,
// which may still wait.
func (e *Engine) markDeleted(ctx context.Context, log *slog.Logger, claimed *runner.Instance, faults []string) error {
	price := e.priceOf(ctx, log, claimed)
	gone, done, err := e.mutateFrom(ctx, claimed.Name, claimed, func(cur *runner.Instance) (*runner.Instance, error) {
		next, err := deleted(cur, faults, e.now())
		if err == nil && price != nil {
			cost := runner.CostOf(next, *price, next.StatusChangedAt)
			next.Cost = &cost
		}
		return next, err
	})
	if err != nil {
		return fmt.Errorf("mark %s deleted: %w", claimed.Name, err)
	}
	if done {
		log.Info("instance deleted", costAttrs(gone.Cost, "status", runner.StatusDeleted)...)
		if claimed.RunnerStatus != runner.RunnerTerminated {
			e.serveJobOf(ctx, log, gone)
		}
	}
	return nil
}

func errorsOf(texts []string) []error {
	out := make([]error, len(texts))
	for i, t := range texts {
		out[i] = errors.New(t)
	}
	return out
}

// removeRunner deregisters the instance's runner from GitHub. Removed and
// never-registered are both success. Busy (422) comes back as
// github.ErrRunnerBusy so the machine is never destroyed under a running job.
func (r *Registrar) removeRunner(ctx context.Context, inst *runner.Instance) error {
	// A record without a runner id is asked about by name: a create cut off
	// after its JIT registration leaves a runner GitHub knows and the
	// record does not, which may be running a job (F19, seed 33448); a name
	// GitHub does not know answers "removed".
	if inst.RunnerRemoved {
		return nil
	}
	return r.github.RemoveRunner(ctx, github.RunnerRef{Owner: inst.GitHubOwner(), ID: inst.GitHubRunnerID, Name: inst.Name, Pool: inst.Pool})
}

// retryDelete puts a failed ordinary delete back to pending_delete with the
// attempt count and due time visible on the instance, and re-sends it after
// the delay deleteRetryDelay decides.
// runnerRemoved says GitHub confirmed the runner gone before the step that
// failed: it is recorded, so the retry does not ask GitHub again.
func (e *Engine) retryDelete(ctx context.Context, log *slog.Logger, claimed *runner.Instance, meta EventMeta, cause error, runnerRemoved bool) error {
	attempts := claimed.Attempts + 1
	var delay time.Duration
	busy := errors.Is(cause, github.ErrRunnerBusy)
	next, won, err := e.mutateFrom(ctx, claimed.Name, claimed, func(cur *runner.Instance) (*runner.Instance, error) {
		if cur.Status != runner.StatusDeleting {
			return nil, errNoChange
		}
		next, err := cur.Transition(runner.StatusPendingDelete, e.now())
		if err != nil {
			return nil, err
		}
		// Decided on the record as it is now, not as claimed: a completed
		// that arrived during the attempt marked it (jobCompleted).
		delay = deleteRetryDelay(cause, cur.RunnerStatus == runner.RunnerTerminated, e.backoff(attempts), e.backoffMax, e.now())
		next.Attempts = attempts
		next.NextAttemptAt = e.now().Add(delay)
		next.RunnerRemoved = cur.RunnerRemoved || runnerRemoved
		next.ProviderFault = providers.Fault(cause)
		if busy && cur.RunnerStatus != runner.RunnerTerminated {
			next.RunnerStatus = runner.RunnerActive
		}
		return next, nil
	})
	if err != nil {
		return fmt.Errorf("record failed delete of %s: %w", claimed.Name, err)
	}
	if !won {
		// Someone moved it on (a force delete); their message does the rest.
		return nil
	}
	log.Warn("delete failed; will retry", "error", cause, "runner_busy", busy, "next_attempt", attempts, "retry_in", delay.String())
	e.observer.DeleteRetried(next.Pool)
	if err := e.send(ctx, deleteMessage(next, meta, attempts), delay); err != nil {
		return fmt.Errorf("re-enqueue delete for %s: %w", claimed.Name, err)
	}
	return nil
}

// busyAfterCompletedMax caps the wait before asking GitHub again about a
// runner it still calls busy although its job's completed has arrived:
// GitHub's busy flag lags the completed by seconds, and a finished job's
// machine must not be kept for delete_backoff_max (issue #32).
const busyAfterCompletedMax = 15 * time.Second

// deleteRetryDelay is how long a failed ordinary delete waits before its
// next attempt, given the ordinary backoff for this attempt (1 s doubling,
// capped at delete_backoff_max, which is backoffMax). A provider or GitHub
// fault waits that backoff; a rate limit waits for its reset too. A busy
// runner (422) waits backoffMax — a JIT runner leaves by itself once its
// job ends, and the job's completed re-sends the delete at once — unless
// that completed has arrived already (completed): then the 422 is GitHub's
// lag behind its own webhook, and the delete is asked again within the
// ordinary backoff capped at busyAfterCompletedMax.
func deleteRetryDelay(cause error, completed bool, backoff, backoffMax time.Duration, now time.Time) time.Duration {
	var rl *github.RateLimitError
	switch {
	case errors.As(cause, &rl):
		return max(backoff, rl.RetryAt.Sub(now))
	case !errors.Is(cause, github.ErrRunnerBusy):
		return backoff
	case completed:
		return min(backoff, busyAfterCompletedMax)
	default:
		return backoffMax
	}
}
