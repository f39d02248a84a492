package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// An interruption is owed to the job the runner actually ran — the job
// in_progress bound it to (Instance.ActiveJobID), which GitHub may have
// taken from any instance's runner — not to the job the instance was made
// for. The instance's mark answers a completed that names its runner while
// the instance is still there; the job's own record carries the
// interruption for the orders in which that mark cannot:
//
//   - the interruption is learnt after the instance was deleted (an
//     operator's forced delete while the provider list failed): the
//     completed finds no mark on the deleted instance, but on its job;
//   - the interruption is learnt after the job's completed (the job's
//     runner lost, the polls failing meanwhile): the job is closed already
//     and moves to rerun now.

// interruptedJobStep is what an interruption of the machine a job ran on
// does to the job's record.
type interruptedJobStep int

const (
	// interruptedJobKeep: nothing (not a spot interruption, known already,
	// a re-run owed or asked for, or the job failed on its own before).
	interruptedJobKeep interruptedJobStep = iota
	// interruptedJobMark: the job has not completed yet; record the
	// interruption on it, for its completed to find.
	interruptedJobMark
	// interruptedJobRerun: the job completed already, failed by the
	// interruption; it is owed its re-run now.
	interruptedJobRerun
)

// decideInterruptedJob decides, from the job's record, what the
// interruption (since: its start) of the machine of the instance named
// instance means for the job.
func decideInterruptedJob(job *runner.Job, instance string, since time.Time) interruptedJobStep {
	switch {
	case job.Interrupted != "" || job.RerunCalls > 0 || job.RerunOutcome != "":
		return interruptedJobKeep
	case job.Status == runner.JobClosed:
		if job.RunnerName != "" && job.RunnerName != instance {
			return interruptedJobKeep
		}
		if failedByInterruption(job.Conclusion, job.CompletedAt, since) {
			return interruptedJobRerun
		}
		return interruptedJobKeep
	case job.Status == runner.JobOpen, job.Status == runner.JobWaiting, job.Status == runner.JobServed:
		return interruptedJobMark
	}
	return interruptedJobKeep
}

// interruptJob applies the interruption of inst's machine to the job its
// runner was bound to, and sends the re-run when one is owed now. It
// reports whether the job's record changed.
func (e *Engine) interruptJob(ctx context.Context, log *slog.Logger, inst *runner.Instance, since time.Time) (bool, error) {
	if inst.ActiveJobID == 0 {
		return false, nil
	}
	key := runner.JobKey(inst.ActiveJobID, inst.ActiveRunAttempt)
	job, changed, err := e.mutateJob(ctx, key, nil, func(cur *runner.Job) (*runner.Job, error) {
		step := decideInterruptedJob(cur, inst.Name, since)
		next := cur.Clone()
		switch step {
		case interruptedJobRerun:
			var err error
			if next, err = cur.Transition(runner.JobRerun, e.now()); err != nil {
				return nil, err
			}
		case interruptedJobMark:
			next.UpdatedAt = e.now()
		default:
			return nil, errNoChange
		}
		next.Interrupted, next.InterruptedSince = inst.Name, since
		return next, nil
	})
	if errors.Is(err, store.ErrJobNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("record the interruption on job %s: %w", key, err)
	}
	if !changed {
		return false, nil
	}
	log = log.With("job_key", key, "job_status", job.Status)
	if job.Status != runner.JobRerun {
		log.Info("the interruption is recorded on the job the runner runs")
		return true, nil
	}
	log.Info("job failed on an interrupted machine before the interruption was known; re-run requested", "conclusion", job.Conclusion)
	if err := e.send(ctx, rerunMessage(job, EventMeta{}), 0); err != nil {
		// The instance's delete re-sends it (rerunOwedBy), and so does the
		// next notice about the machine.
		return true, fmt.Errorf("enqueue the re-run of job %s: %w", key, err)
	}
	return true, nil
}

// deletedOnMachine returns the deleted instance named name whose machine
// had providerID (or none recorded): a notice polled after the instance
// was deleted still owes the job its runner ran a re-run. Only a poll
// names the machine; a deleted instance is never searched by provider id.
func (e *Engine) deletedOnMachine(ctx context.Context, name, providerID string) (*runner.Instance, error) {
	if name == "" || !runner.OursByName(name) {
		return nil, nil
	}
	inst, err := e.store.GetInstance(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read instance %s: %w", name, err)
	}
	if inst.Status != runner.StatusDeleted || inst.ProviderID != "" && inst.ProviderID != providerID {
		return nil, nil
	}
	return inst, nil
}

// boundByGitHub is a deleted instance that no in_progress ever bound (the
// delivery was lost, and the instance deleted — an operator's forced
// delete — before any could arrive) bound to the job its runner ran, when
// GitHub said which: to the job check of the job the instance was made
// for (its RunnerName, recorded from GitHub's answer). Nil otherwise: a
// runner that ran another job, whose in_progress was lost too, is not
// found — a deleted record is final, and nothing indexes jobs by runner
// (docs/design-notes.md, "an unbound deleted instance").
func (e *Engine) boundByGitHub(ctx context.Context, inst *runner.Instance) (*runner.Instance, error) {
	job, err := e.store.GetJob(ctx, runner.JobKey(inst.JobID, inst.RunAttempt))
	if errors.Is(err, store.ErrJobNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the job of %s: %w", inst.Name, err)
	}
	if job.RunnerName != inst.Name {
		return nil, nil
	}
	bound := inst.Clone()
	bound.ActiveJobID, bound.ActiveRunAttempt = job.ID, job.RunAttempt
	return bound, nil
}
