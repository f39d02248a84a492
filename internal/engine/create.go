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

// create claims a pending_create instance (pending_create -> creating, a
// compare-and-set only one worker can win), registers its JIT runner and asks
// the provider for the machine.
func (e *Engine) create(ctx context.Context, msg Message) error {
	log := withEvent(e.log, msg.event()).With("job_id", msg.JobID, "instance", msg.Instance)
	claimed, pool, log, err := e.claimCreate(ctx, log, msg)
	if err != nil || claimed == nil {
		return err
	}
	shape, err := machineShape(pool, claimed)
	if err != nil {
		// Its pool's policy was narrowed after the job was admitted.
		return e.createFailed(ctx, log, claimed, createFailure{cause: err, stage: "shape"})
	}
	// A create keeps its turn in GitHub's budget (createWaits), so held
	// back creates go in the order they first asked: oldest job first.
	jitCtx := github.WithTurns(ctx)
	if msg.Turn != nil {
		jitCtx = github.WithTurn(ctx, msg.Turn)
	}
	jit, err := e.github.GenerateJITConfig(jitCtx, github.JITRequest{
		Owner:       claimed.GitHubOwner(),
		Name:        claimed.Name,
		Labels:      claimed.Labels,
		RunnerGroup: pool.RunnerGroup,
		Pool:        claimed.Pool,
	})
	if wait, ok := waitsForGitHub(err); ok {
		return e.createWaits(ctx, log, claimed, wait, err)
	}
	if err != nil {
		return e.createFailed(ctx, log, claimed, createFailure{cause: err, stage: "github"})
	}
	claimed.GitHubRunnerID = jit.RunnerID
	machine, failed := e.makeMachine(ctx, log, claimed, pool, claimed.GitHubOwner(), shape, jit)
	if failed != nil {
		return e.createFailed(ctx, log, claimed, *failed)
	}
	return e.recordCreated(ctx, log, msg, claimed, machine, jit.RunnerID)
}

// claimCreate reads the message's instance and claims its create; a nil
// instance means there is nothing (more) to do. The logger returned names
// the pool and the create attempt.
func (e *Engine) claimCreate(ctx context.Context, log *slog.Logger, msg Message) (*runner.Instance, *runner.Pool, *slog.Logger, error) {
	inst, err := e.getLive(ctx, msg.Instance)
	if err != nil {
		return nil, nil, log, fmt.Errorf("read instance %s: %w", msg.Instance, err)
	}
	if take, err := e.takeOver(ctx, inst, "create"); err != nil || take {
		if err != nil {
			return nil, nil, log, err
		}
		log = log.With("pool", inst.Pool, "create_attempt", inst.CreateAttempt)
		log.Warn("an earlier try of this message claimed the create and recorded no outcome; taking it over",
			"claimed_at", inst.StatusChangedAt, "claim", inst.Claim)
		return nil, nil, log, e.recoverCreating(ctx, log, inst, "redelivery")
	}
	if inst == nil || inst.Status != runner.StatusPendingCreate {
		log.Debug("create message is stale; nothing to do")
		return nil, nil, log, nil
	}
	log = log.With("pool", inst.Pool)
	pool, ok := e.pool(inst.Pool)
	if !ok {
		log.Warn("pool no longer configured; instance scheduled for delete")
		return nil, nil, log, e.scheduleDelete(ctx, log, inst.Name, msg.event(), "pool no longer configured")
	}
	claimed, won, err := e.mutateFrom(ctx, inst.Name, inst, func(cur *runner.Instance) (*runner.Instance, error) {
		if cur.Status != runner.StatusPendingCreate {
			return nil, errNoChange
		}
		next, err := cur.Transition(runner.StatusCreating, e.now())
		if err != nil {
			return nil, err
		}
		next.CreateAttempt++
		next.NextAttemptAt, next.WaitingForGitHub = time.Time{}, time.Time{}
		next.Claim, next.ClaimUntil = deliveryOf(ctx).claim(), claimUntil(ctx, e.now())
		return next, nil
	})
	if err != nil {
		return nil, nil, log, fmt.Errorf("claim %s for create: %w", inst.Name, err)
	}
	if !won {
		log.Debug("another worker claimed the create")
		return nil, nil, log, nil
	}
	return claimed, pool, log.With("create_attempt", claimed.CreateAttempt), nil
}

// makeMachine prepares the runner's bootstrap and asks the pool's provider
// for the machine, within the pool's bootstrap timeout. A failure says
// what it may have left behind.
func (e *Engine) makeMachine(ctx context.Context, log *slog.Logger, claimed *runner.Instance, pool *runner.Pool, owner github.Owner, shape *runner.Machine, jit *github.JITConfig) (providers.Instance, *createFailure) {
	req := providers.CreateRequest{
		Name:             claimed.Name,
		Pool:             claimed.Pool,
		PoolID:           pool.ID,
		Labels:           claimed.Labels,
		RunnerGroup:      pool.RunnerGroup,
		RepoURL:          owner.URL(),
		MetadataURL:      e.opts.MetadataURL,
		CallbackURL:      e.opts.CallbackURL,
		JITConfigEnabled: true,
		RunnerDownloads:  e.runnerDownloads(ctx, log, owner),
	}
	req.Shape = shape
	if req.OnDemandOnly = e.onDemandOnly(ctx, log, claimed.Pool); req.OnDemandOnly {
		log.Info("spot breaker open: asking for on-demand capacity only")
	}
	// Runner bootstrap (bootstrap.go): the JIT configuration is stored for
	// the machine to fetch with its instance token; it never goes into the
	// request. The token and the per-instance URLs do.
	boot, err := e.prepareBootstrap(ctx, claimed, pool, jit)
	if err != nil {
		return providers.Instance{}, &createFailure{cause: err, stage: "bootstrap", runnerID: jit.RunnerID}
	}
	if boot.token != "" {
		req.InstanceToken, req.MetadataURL, req.CallbackURL = boot.token, boot.metadataURL, boot.callbackURL
	}
	pctx, cancel := context.WithTimeout(ctx, pool.BootstrapTimeout)
	machine, err := e.providers[pool.Name].CreateInstance(pctx, req)
	timedOut := errors.Is(pctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	cancel()
	if err == nil && machine.Status == providers.StatusError {
		err = &providers.Error{Op: "CreateInstance", Instance: claimed.Name, Fault: machine.Fault}
	}
	if err != nil {
		fault := providers.Fault(err)
		if timedOut {
			fault = fmt.Sprintf("provider create exceeded the bootstrap timeout %s: %s", pool.BootstrapTimeout, fault)
		}
		return machine, &createFailure{
			cause: err, fault: fault, stage: "provider", runnerID: jit.RunnerID, machineMayExist: true, providerID: machine.ProviderID,
		}
	}
	return machine, nil
}

// created is the instance as it is once its machine and runner are made
// (providerID, runnerID) by the create attempt that claimed it: running,
// or pending_delete if its job ended meanwhile. An instance someone moved
// on during the create (an operator's delete, the reconciler) keeps their
// status but records what was made, so the delete that follows removes
// the machine and the runner. errNoChange when there is nothing to record.
func created(cur, claimed *runner.Instance, providerID string, runnerID int64, now time.Time) (*runner.Instance, error) {
	if cur.Status == runner.StatusCreating && cur.CreateAttempt == claimed.CreateAttempt {
		to := runner.StatusRunning
		if cur.RunnerStatus == runner.RunnerTerminated {
			// Its job ended while the machine was being made.
			to = runner.StatusPendingDelete
		}
		next, err := cur.Transition(to, now)
		if err != nil {
			return nil, err
		}
		next.ProviderID, next.GitHubRunnerID, next.ProviderFault = providerID, runnerID, ""
		return next, nil
	}
	if !cur.Status.Live() || (cur.ProviderID != "" && cur.GitHubRunnerID != 0) {
		return nil, errNoChange
	}
	next := cur.Clone()
	next.ProviderID, next.GitHubRunnerID = providerID, runnerID
	next.UpdatedAt = now
	return next, nil
}

// recordMachine notes on next what the provider made, for its price:
// the machine type and market it reports, and the start of the create
// that made it (the claim's time: the provider bills from its launch,
// which comes after, and a create cut short still left a machine).
func recordMachine(next, claimed *runner.Instance, machine providers.Instance) {
	if next.MachineAt.IsZero() || next.CreateAttempt == claimed.CreateAttempt {
		next.MachineType, next.Market, next.MachineAt = machine.MachineType, machine.Market, claimed.StatusChangedAt
	}
}

// recordCreated records the machine and runner a create made (created)
// and sends on what follows: the delete of an instance whose job ended
// meanwhile, or of a machine whose instance was deleted under it.
func (e *Engine) recordCreated(ctx context.Context, log *slog.Logger, msg Message, claimed *runner.Instance, machine providers.Instance, runnerID int64) error {
	final, _, err := e.mutateFrom(ctx, claimed.Name, claimed, func(cur *runner.Instance) (*runner.Instance, error) {
		next, err := created(cur, claimed, machine.ProviderID, runnerID, e.now())
		if err == nil {
			recordMachine(next, claimed, machine)
		}
		return next, err
	})
	if err != nil {
		return fmt.Errorf("record created machine for %s: %w", claimed.Name, err)
	}
	if !final.Status.Live() {
		// Deleted under us (an operator's forced delete): the machine just
		// made is known only here, by its id.
		if err := e.deleteMachine(ctx, claimed.Pool, machine.ProviderID); err != nil {
			log.Warn("the instance was deleted while its machine was made; deleting that machine failed, the reconciler retries", "provider_id", machine.ProviderID, "error", err)
		}
		return nil
	}
	log.Info("instance created", "status", final.Status, "provider_id", machine.ProviderID, "github_runner_id", runnerID)
	e.jobWaited(final, StageCreated)
	if final.Status.PendingDeletion() {
		if err := e.send(ctx, deleteMessage(final, msg.event(), final.Attempts), 0); err != nil {
			return fmt.Errorf("enqueue delete for %s: %w", final.Name, err)
		}
	}
	return nil
}

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

// cleanupContext outlives the caller's cancellation — a create cut off by a
// deadline or a shutdown must still delete what it half-made (P13) — but is
// bounded: by the provider timeout, and by a short grace past the caller's
// own deadline when it has one.
func (e *Engine) cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	budget := e.opts.ProviderTimeout
	for _, p := range e.pools {
		budget = max(budget, p.ProviderTimeout)
	}
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, max(time.Until(dl), 0)+cleanupGrace)
	}
	return context.WithTimeout(context.WithoutCancel(ctx), budget)
}

// deleteMachine asks the pool's provider to delete one machine, bounded by
// the provider timeout. Not found is success.
func (e *Engine) deleteMachine(ctx context.Context, pool, target string) error {
	p := e.providers[pool]
	if p == nil {
		return fmt.Errorf("pool %q is no longer configured; cannot reach its provider", pool)
	}
	dctx, cancel := context.WithTimeout(ctx, e.providerTimeout(pool))
	defer cancel()
	err := p.DeleteInstance(dctx, target)
	if errors.Is(err, providers.ErrNotFound) {
		return nil
	}
	return err
}

// scheduleDelete moves a live instance to pending_delete (from any state the
// table allows) and enqueues its delete.
func (e *Engine) scheduleDelete(ctx context.Context, log *slog.Logger, name string, meta EventMeta, fault string) error {
	next, _, err := e.mutate(ctx, name, func(cur *runner.Instance) (*runner.Instance, error) {
		if !cur.Status.Live() || cur.Status.PendingDeletion() || cur.Status == runner.StatusDeleting {
			return nil, errNoChange
		}
		next, err := cur.Transition(runner.StatusPendingDelete, e.now())
		if err != nil {
			return nil, err
		}
		if fault != "" {
			next.ProviderFault = fault
		}
		return next, nil
	})
	if err != nil {
		return fmt.Errorf("schedule delete of %s: %w", name, err)
	}
	if !next.Status.PendingDeletion() {
		return nil
	}
	if err := e.send(ctx, deleteMessage(next, meta, next.Attempts), 0); err != nil {
		return fmt.Errorf("enqueue delete for %s: %w", name, err)
	}
	log.Info("instance scheduled for delete", "status", next.Status)
	// The instance no longer serves its job: if the job still waits, the
	// next instance is made now (or after its backoff).
	e.serveJobOf(ctx, log, next)
	return nil
}

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
