package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/runfleet/runfleet/events"
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// OnWorkflowJob applies one workflow_job webhook. Every path is idempotent:
// the same delivery, or the same job through several deliveries, in any
// order, ends with at most one instance per job (lessons-from-peers P2, P3).
func (e *Engine) OnWorkflowJob(ctx context.Context, deliveryID string, ev *events.WorkflowJobEvent) (Outcome, error) {
	job := ev.WorkflowJob
	log := e.log.With("delivery_id", deliveryID, "job_id", job.ID, "run_attempt", job.RunAttempt, "action", ev.Action)
	switch ev.Action {
	case events.ActionQueued:
		return e.onQueued(ctx, log, deliveryID, ev)
	case events.ActionInProgress:
		return e.onInProgress(ctx, log, ev)
	case events.ActionCompleted:
		return e.onCompleted(ctx, log, deliveryID, ev)
	case events.ActionWaiting:
		log.Info("job waiting for approval; nothing to do until it is queued again")
		return Outcome{Action: ev.Action, Result: ResultRecorded}, nil
	default:
		log.Info("workflow_job action not acted on")
		return Outcome{Action: ev.Action, Result: ResultIgnored}, nil
	}
}

func (e *Engine) matchPool(ev *events.WorkflowJobEvent) (*config.Pool, bool) {
	var org, enterprise string
	if ev.Organization != nil {
		org = ev.Organization.Login
	} else if ev.Repository != nil && ev.Repository.Owner != nil {
		org = ev.Repository.Owner.Login
	}
	if ev.Enterprise != nil {
		enterprise = ev.Enterprise.Slug
	}
	return e.pools.MatchPool(ev.Repository.FullName, org, enterprise, ev.WorkflowJob.Labels)
}

func (e *Engine) onQueued(ctx context.Context, log *slog.Logger, deliveryID string, ev *events.WorkflowJobEvent) (Outcome, error) {
	pool, ok := e.matchPool(ev)
	if !ok {
		log.Info("no pool serves this job's owner and labels", "labels", ev.WorkflowJob.Labels, "repository", ev.Repository.FullName)
		return Outcome{Action: ev.Action, Result: ResultNoMatchingPool}, nil
	}
	job := &events.Job{
		Pool:       pool.Name,
		ID:         ev.WorkflowJob.ID,
		RunAttempt: ev.WorkflowJob.RunAttempt,
		Owner:      pool.Owner,
		Repository: ev.Repository.FullName,
		Labels:     ev.WorkflowJob.Labels,
	}
	if ev.Installation != nil {
		job.InstallationID = ev.Installation.ID
	}
	return e.admitJob(ctx, log.With("pool", pool.Name), deliveryID, job, 0)
}

// admitJob writes the job's instance and reserves its capacity in one
// conditional write, then enqueues the create. A full pool keeps the job on
// the queue (scale_up, with backoff) instead of dropping it.
func (e *Engine) admitJob(ctx context.Context, log *slog.Logger, deliveryID string, job *events.Job, attempt int) (Outcome, error) {
	pool, ok := e.pool(job.Pool)
	if !ok {
		log.Warn("pool no longer configured; job dropped", "pool", job.Pool)
		return Outcome{Action: events.ActionQueued, Result: ResultNoMatchingPool}, nil
	}
	name := runner.InstanceName(pool.Name, job.ID, job.RunAttempt)
	log = log.With("instance", name)
	out := Outcome{Action: events.ActionQueued, Instance: name, Pool: pool.Name}
	now := e.now()
	inst := &runner.Instance{
		Name:            name,
		Pool:            pool.Name,
		Status:          runner.StatusPendingCreate,
		RunnerStatus:    runner.RunnerPending,
		JobID:           job.ID,
		RunAttempt:      job.RunAttempt,
		Owner:           job.Owner,
		InstallationID:  job.InstallationID,
		Labels:          runnerLabels(pool, e.opts.ControllerID),
		CreatedAt:       now,
		UpdatedAt:       now,
		StatusChangedAt: now,
	}
	err := e.createAndEnqueue(ctx, inst, pool.MaxRunners, deliveryID)
	switch {
	case err == nil:
		log.Info("instance admitted", "status", inst.Status)
		out.Result = ResultCreated
		return out, nil
	case errors.Is(err, store.ErrAlreadyExists):
		out.Result = ResultDuplicate
		existing, gerr := e.store.GetInstance(ctx, name)
		if gerr == nil && existing.Status == runner.StatusPendingCreate {
			// A previous attempt may have written the instance but failed to
			// enqueue; a second create message is harmless (the worker's
			// compare-and-set admits one).
			if err := e.send(ctx, kindCreate(existing, deliveryID), 0); err != nil {
				return out, fmt.Errorf("re-enqueue create for %s: %w", name, err)
			}
		}
		log.Info("job already has its instance")
		return out, nil
	case errors.Is(err, store.ErrPoolFull):
		attempt++
		delay := min(e.backoff(attempt), scaleUpRetryMax)
		msg := events.Message{Kind: events.KindScaleUp, Instance: name, DeliveryID: deliveryID, JobID: job.ID, Attempt: attempt, Job: job}
		if err := e.send(ctx, msg, delay); err != nil {
			return out, fmt.Errorf("enqueue scale_up for %s: %w", name, err)
		}
		log.Info("pool at max_runners; job kept for retry", "max_runners", pool.MaxRunners, "retry_in", delay.String(), "attempt", attempt)
		out.Result = ResultAwaitingCapacity
		return out, nil
	default:
		return out, fmt.Errorf("create instance %s: %w", name, err)
	}
}

// createAndEnqueue creates inst and enqueues its create message. A store
// that keeps the queue (store.Outbox) does both in one commit; otherwise the
// message follows the create, and if it is lost in between the reconciler
// re-sends it. Errors from the create are returned unwrapped, so callers
// match store.ErrAlreadyExists and store.ErrPoolFull.
func (e *Engine) createAndEnqueue(ctx context.Context, inst *runner.Instance, maxRunners int, deliveryID string) error {
	outbox, ok := e.store.(store.Outbox)
	if !ok {
		if err := e.store.CreateInstance(ctx, inst, maxRunners); err != nil {
			return err
		}
		if err := e.send(ctx, kindCreate(inst, deliveryID), 0); err != nil {
			return fmt.Errorf("enqueue create for %s: %w", inst.Name, err)
		}
		return nil
	}
	body, err := events.Encode(kindCreate(inst, deliveryID))
	if err != nil {
		return fmt.Errorf("encode create for %s: %w", inst.Name, err)
	}
	return outbox.CreateInstanceAndSend(ctx, inst, maxRunners, body)
}

// scaleUpRetryMax caps how long a job waiting for pool capacity sleeps
// between tries, so a slot freed by a delete is taken within seconds rather
// than after the 5-minute delete backoff cap.
const scaleUpRetryMax = 15 * time.Second

// runnerLabels are the labels a pool's runners register with: "self-hosted"
// first, as GitHub gives every self-hosted runner, then the pool's own, then
// the controller's ownership label (jobs match runners whose labels cover
// theirs, so an extra label never keeps a job from a runner).
func runnerLabels(pool *config.Pool, controllerID string) []string {
	labels := []string{"self-hosted"}
	for _, l := range pool.Labels {
		if !strings.EqualFold(l, "self-hosted") {
			labels = append(labels, l)
		}
	}
	if own := ControllerLabel(controllerID); own != "" {
		labels = append(labels, own)
	}
	return labels
}

// ourInstance returns the instance named by a runner name, or nil when the
// runner is not one of ours.
func (e *Engine) ourInstance(ctx context.Context, runnerName string) (*runner.Instance, error) {
	if !strings.HasPrefix(runnerName, runner.NamePrefix) {
		return nil, nil
	}
	inst, err := e.store.GetInstance(ctx, runnerName)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return inst, err
}

func (e *Engine) onInProgress(ctx context.Context, log *slog.Logger, ev *events.WorkflowJobEvent) (Outcome, error) {
	out := Outcome{Action: ev.Action, Result: ResultIgnored}
	name := ev.WorkflowJob.Runner()
	log = log.With("instance", name)
	inst, err := e.ourInstance(ctx, name)
	if err != nil {
		return out, fmt.Errorf("read instance %s: %w", name, err)
	}
	if inst == nil {
		log.Info("job taken by a runner runfleet does not manage")
		return out, nil
	}
	out.Instance, out.Pool = inst.Name, inst.Pool
	log = log.With("pool", inst.Pool)
	jobID := ev.WorkflowJob.ID
	_, changed, err := e.mutateFrom(ctx, name, inst, func(cur *runner.Instance) (*runner.Instance, error) {
		// An instance on its way out keeps its status: binding it would only
		// race the delete worker's compare-and-set.
		if !cur.Status.Live() || cur.Status.PendingDeletion() || cur.Status == runner.StatusDeleting ||
			cur.RunnerStatus == runner.RunnerActive && cur.ActiveJobID == jobID {
			return nil, errNoChange
		}
		next := cur.Clone()
		next.RunnerStatus = runner.RunnerActive
		next.ActiveJobID = jobID
		next.UpdatedAt = e.now()
		return next, nil
	})
	if err != nil {
		return out, fmt.Errorf("bind runner %s to job %d: %w", name, jobID, err)
	}
	out.Result = ResultBound
	if changed {
		log.Info("runner bound to job", "runner_status", runner.RunnerActive)
	}
	return out, nil
}

func (e *Engine) onCompleted(ctx context.Context, log *slog.Logger, deliveryID string, ev *events.WorkflowJobEvent) (Outcome, error) {
	out := Outcome{Action: ev.Action, Result: ResultIgnored}
	name := ev.WorkflowJob.Runner()
	jobID := ev.WorkflowJob.ID
	runnerless := name == ""
	if runnerless {
		// The job ended (typically cancelled) before any runner took it. The
		// instance made for it is surplus unless it has taken another job.
		pool, ok := e.matchPool(ev)
		if !ok {
			return out, nil
		}
		name = runner.InstanceName(pool.Name, jobID, ev.WorkflowJob.RunAttempt)
	}
	log = log.With("instance", name)
	inst, err := e.ourInstance(ctx, name)
	if err != nil {
		return out, fmt.Errorf("read instance %s: %w", name, err)
	}
	if inst == nil || runnerless && inst.RunnerStatus == runner.RunnerActive {
		log.Info("job completed; no instance of ours to remove")
		return out, nil
	}
	out.Instance, out.Pool = inst.Name, inst.Pool
	log = log.With("pool", inst.Pool)
	next, changed, err := e.mutateFrom(ctx, name, inst, func(cur *runner.Instance) (*runner.Instance, error) {
		if cur.Status.PendingDeletion() || cur.Status == runner.StatusDeleting || !cur.Status.Live() {
			return nil, errNoChange
		}
		next, err := cur.Transition(runner.StatusPendingDelete, e.now())
		if err != nil {
			return nil, err
		}
		if cur.ActiveJobID == jobID || cur.ActiveJobID == 0 && ev.WorkflowJob.Runner() != "" {
			next.RunnerStatus = runner.RunnerTerminated
		}
		return next, nil
	})
	if err != nil {
		return out, fmt.Errorf("schedule delete of %s: %w", name, err)
	}
	out.Result = ResultDeleteScheduled
	if !changed && !next.Status.PendingDeletion() {
		log.Info("instance already being deleted", "status", next.Status)
		return out, nil
	}
	// Also re-sent when already pending: an earlier attempt may have failed
	// between its write and its send. The worker's compare-and-set admits one.
	if err := e.send(ctx, kindDelete(next, deliveryID, 0), 0); err != nil {
		// Recorded as pending_delete: the reconciler re-sends lost deletes.
		return out, fmt.Errorf("enqueue delete for %s: %w", name, err)
	}
	log.Info("job completed; instance scheduled for delete", "status", next.Status)
	return out, nil
}
