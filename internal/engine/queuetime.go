package engine

import (
	"context"

	"github.com/runfleet/runfleet/internal/runner"
)

// jobWaited tells the observer how long the job inst was made for had
// waited when inst reached stage. The job's queued time lives on its
// ledger record, so this costs one read — skipped when nobody listens, for
// warm instances (no job) and for jobs the ledger no longer holds. A job
// served by several instances in turn (its first one failed) reports a
// stage once per instance that reached it.
func (in *Intake) jobWaited(ctx context.Context, inst *runner.Instance, stage QueueStage) {
	if _, nop := in.observer.(NopObserver); nop || inst == nil || inst.JobID == 0 {
		return
	}
	job, err := in.store.GetJob(ctx, runner.JobKey(inst.JobID, inst.RunAttempt))
	if err != nil || job.QueuedAt.IsZero() {
		return
	}
	in.observer.JobWaited(job.Pool, stage, in.now().Sub(job.QueuedAt))
}
