package engine

// A create that failed: what it may have left behind, the clean-up that
// removes it (by name, and only while the attempt still owns the name),
// and the decision to retry or give up.

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

// createFailure describes what a failed create may have left behind.
type createFailure struct {
	cause           error
	fault           string // what to record; default: the cause's fault text
	stage           string // github, token, provider
	runnerID        int64  // JIT runner registered before the failure
	machineMayExist bool
	providerID      string
}

// createFailed cleans up after a failed create BEFORE anything else happens
// (lessons-from-peers P13, P10): the provider is asked to delete the machine
// by name (a half-made machine must not survive next to a retry's), and the
// JIT runner is removed from GitHub. Only when both are confirmed gone is the
// create retried (creating -> pending_create, with backoff); otherwise the
// instance goes error -> pending_delete and the delete path keeps trying.
func (e *Engine) createFailed(ctx context.Context, log *slog.Logger, claimed *runner.Instance, f createFailure) error {
	ctx, cancel := e.cleanupContext(ctx)
	defer cancel()
	if f.fault == "" {
		f.fault = providers.Fault(f.cause)
	}
	log.Warn("create failed", "stage", f.stage, "error", f.cause, "fault", f.fault)
	c := e.cleanUpFailedCreate(ctx, log, claimed, f)
	c.retry = retriesCreate(claimed, f, c.cleaned, e.opts.MaxCreateAttempts)
	c.delay = e.backoff(claimed.CreateAttempt)
	var rl *github.RateLimitError
	if errors.As(f.cause, &rl) {
		c.delay = max(c.delay, rl.RetryAt.Sub(e.now()))
	}
	next, won, err := e.mutateFrom(ctx, claimed.Name, claimed, func(cur *runner.Instance) (*runner.Instance, error) {
		return failedCreate(cur, claimed, f, c, e.now())
	})
	if err != nil {
		return fmt.Errorf("record failed create of %s: %w", claimed.Name, err)
	}
	if !won {
		return nil
	}
	if next.Status == runner.StatusPendingCreate {
		log.Info("create will be retried", "retry_in", c.delay.String(), "fault", f.fault)
		return e.send(ctx, createMessage(next, EventMeta{}), c.delay)
	}
	log.Warn("create failed for good; instance marked error", "fault", f.fault)
	return e.scheduleDelete(ctx, log, next.Name, EventMeta{}, f.fault)
}

// createCleanup is what cleaning up after a failed create found, and what
// follows from it.
type createCleanup struct {
	// cleaned: the runner and any machine are confirmed gone.
	cleaned bool
	// busy: GitHub says the runner is running a job.
	busy bool
	// retry the create under the same name after delay (retriesCreate).
	retry bool
	delay time.Duration
}

// cleanUpFailedCreate removes what a failed create may have left: GitHub
// first — a machine that booted meanwhile may have a runner that already
// took a job, and such a machine must not be destroyed — then the machine,
// only once GitHub confirmed the runner gone (removed, or never
// registered). The runner is removed by id when the create got that far,
// else by name (a worker that died mid-create never recorded the id).
func (e *Engine) cleanUpFailedCreate(ctx context.Context, log *slog.Logger, claimed *runner.Instance, f createFailure) createCleanup {
	if !e.attemptOwnsName(ctx, claimed) {
		return e.cleanUpStaleAttempt(ctx, log, claimed, f)
	}
	c := createCleanup{cleaned: true}
	runnerGone := true
	if f.runnerID != 0 || f.machineMayExist {
		err := e.github.RemoveRunner(ctx, github.RunnerRef{Owner: claimed.GitHubOwner(), ID: f.runnerID, Name: claimed.Name, Pool: claimed.Pool})
		switch {
		case errors.Is(err, github.ErrRunnerBusy):
			c.cleaned, c.busy, runnerGone = false, true, false
			log.Warn("the failed create's runner is running a job; its machine is kept and deleted once the job is done")
		case err != nil:
			c.cleaned, runnerGone = false, false
			log.Warn("removing the unused JIT runner failed; its machine is kept until the delete path removes the runner first", "error", err)
		}
	}
	if !f.machineMayExist || !runnerGone {
		return c
	}
	target := f.providerID
	if target == "" {
		target = claimed.Name
		if !e.stillOwnsName(ctx, log, claimed) {
			return createCleanup{}
		}
	}
	if err := e.deleteMachine(ctx, claimed.Pool, target); err != nil {
		c.cleaned = false
		log.Warn("delete after failed create failed; instance goes to pending_delete", "error", err)
	}
	// A provider whose delete by name is a no-op (garm-provider-aws)
	// leaves the half-made machine running: list the pool and delete
	// every machine of this name by its provider id, so a retry never
	// runs beside it — unless a later attempt holds the name by now.
	if !e.stillOwnsName(ctx, log, claimed) {
		return createCleanup{}
	}
	if err := e.sweepMachines(ctx, log, claimed.Pool, claimed.Name, ""); err != nil {
		c.cleaned = false
		log.Warn("listing the pool after a failed create failed; instance goes to pending_delete", "error", err)
	}
	return c
}

// retriesCreate reports whether a failed create is retried under the
// same name: only when all it left is gone, attempts remain, the failure
// is not one a retry would meet again (a misconfigured GitHub App, a shape
// the pool refuses), and the instance is still wanted — not one whose
// runner already ran a job to its end while the create was in flight
// (RunnerTerminated): GitHub gave that runner another job, the job the
// instance was made for was handed that job's instance, and a new machine
// would serve a job that is covered already (found by the simulation:
// seed 17091 of make sim, with eight others).
func retriesCreate(claimed *runner.Instance, f createFailure, cleaned bool, maxAttempts int) bool {
	var refused *runner.ShapeRefusal
	return cleaned && claimed.CreateAttempt < maxAttempts && claimed.RunnerStatus != runner.RunnerTerminated &&
		!errors.Is(f.cause, github.ErrMisconfigured) && !errors.As(f.cause, &refused)
}

// failedCreate is the instance claimed by a create attempt once that
// attempt failed (f) and was cleaned up after (c): pending_create again
// for a retry, else error, with the fault recorded and what is left to
// delete kept. errNoChange when the attempt is no longer the instance's.
func failedCreate(cur, claimed *runner.Instance, f createFailure, c createCleanup, now time.Time) (*runner.Instance, error) {
	if cur.Status != runner.StatusCreating || cur.CreateAttempt != claimed.CreateAttempt {
		return nil, errNoChange
	}
	// The instance's runner may have finished a job since the attempt
	// was claimed (its completed arrived meanwhile): no retry then either.
	retry := c.retry && cur.RunnerStatus != runner.RunnerTerminated
	to := runner.StatusError
	if retry {
		to = runner.StatusPendingCreate
	}
	next, err := cur.Transition(to, now)
	if err != nil {
		return nil, err
	}
	next.ProviderFault = f.fault
	if retry {
		next.NextAttemptAt = now.Add(c.delay)
		next.GitHubRunnerID, next.ProviderID = 0, ""
		// An interruption belongs to the machine the provider took back,
		// not to the name: the retry makes another machine, and a job its
		// runner fails on its own must not be re-run for the first one's
		// (make sim seed 15542).
		next.Interruption, next.InterruptedAt, next.InterruptedSince = "", time.Time{}, time.Time{}
	} else {
		next.GitHubRunnerID, next.ProviderID = f.runnerID, f.providerID
	}
	if c.busy {
		next.RunnerStatus = runner.RunnerActive
	}
	return next, nil
}

// cleanupGrace is how long clean-up may run past the caller's deadline. On
// Lambda the worker's deadline is set a few seconds before the function's.
const cleanupGrace = 2 * time.Second

// attemptOwnsName reports whether claimed's create attempt is still the
// instance's: a hung attempt that the reconciler gave up on returns long
// after a later attempt made its own machine, with its own runner, under
// the same name (make sim seed 13365: the stale attempt's clean-up by
// name destroyed the later machine while its runner ran a job). A read
// that fails counts as owning: the clean-up then is the careful one it
// always was, and the compare-and-set after it decides.
func (e *Engine) attemptOwnsName(ctx context.Context, claimed *runner.Instance) bool {
	cur, err := e.store.GetInstance(ctx, claimed.Name)
	if err != nil {
		return !errors.Is(err, store.ErrNotFound)
	}
	return cur.Status == runner.StatusCreating && cur.CreateAttempt == claimed.CreateAttempt
}

// stillOwnsName is attemptOwnsName asked again during a clean-up, before
// a step by name: a clean-up's calls can take minutes (a slow delete),
// and the reconciler may give up on the attempt meanwhile and a later
// attempt make its machine under the name, whose runner may be running
// a job by then (F22). What is left of the superseded attempt is the
// later attempt's delete's to sweep.
func (e *Engine) stillOwnsName(ctx context.Context, log *slog.Logger, claimed *runner.Instance) bool {
	if e.attemptOwnsName(ctx, claimed) {
		return true
	}
	log.Warn("the create attempt was superseded during its clean-up; nothing more is deleted by its name")
	return false
}

// cleanUpStaleAttempt removes only what a superseded attempt made itself,
// by id — its runner, its machine — never anything by the name a later
// attempt now holds. Its record is not its own any more: nothing is
// written (failedCreate's compare-and-set finds the attempt changed).
func (e *Engine) cleanUpStaleAttempt(ctx context.Context, log *slog.Logger, claimed *runner.Instance, f createFailure) createCleanup {
	log.Warn("a superseded create attempt failed; removing only what it made, by id")
	if f.runnerID != 0 {
		if err := e.github.RemoveRunner(ctx, github.RunnerRef{Owner: claimed.GitHubOwner(), ID: f.runnerID, Pool: claimed.Pool}); err != nil {
			log.Warn("removing the superseded attempt's runner failed; the reconciler removes it", "error", err, "github_runner_id", f.runnerID)
			return createCleanup{}
		}
	}
	if f.providerID != "" {
		if err := e.deleteMachine(ctx, claimed.Pool, f.providerID); err != nil {
			log.Warn("deleting the superseded attempt's machine failed; the instance's delete sweeps its name", "error", err, "provider_id", f.providerID)
		}
	}
	return createCleanup{}
}
