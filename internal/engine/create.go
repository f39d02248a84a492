package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
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
	if taken, err := e.takeOver(ctx, inst, "create"); err != nil || taken != nil {
		if err != nil {
			return nil, nil, log, err
		}
		log = log.With("pool", inst.Pool, "create_attempt", inst.CreateAttempt)
		log.Warn("an earlier try of this message claimed the create and recorded no outcome; taking it over",
			"claimed_at", inst.StatusChangedAt, "claim", inst.Claim)
		return nil, nil, log, e.recoverCreating(ctx, log, taken, "redelivery")
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
		next.Claim, next.ClaimUntil = claimOf(ctx), claimUntil(ctx, e.now())
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

// cleanupContext outlives the caller's cancellation — a create cut off by a
// deadline or a shutdown must still delete what it half-made (P13) — but is
// bounded: by the provider timeout, and by a short grace past the caller's
// own deadline when it has one.
func (e *Engine) cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	budget := e.cleanupBudget()
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, max(time.Until(dl), 0)+cleanupGrace)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
	// Past ctx's cancellation, but not past the holder's life: a replica
	// whose liveness lapsed has its work taken over (takeover.go).
	untilDead(ctx, cctx, cancel)
	return cctx, cancel
}

// cleanupBudget is the longest a clean-up may take: the longest provider
// timeout.
func (e *Engine) cleanupBudget() time.Duration {
	budget := e.opts.ProviderTimeout
	for _, p := range e.pools {
		budget = max(budget, p.ProviderTimeout)
	}
	return budget
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
