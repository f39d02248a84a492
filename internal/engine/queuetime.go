package engine

import "github.com/runfleet/runfleet/internal/runner"

// jobWaited tells the observer how long the job inst was made for had
// waited when inst reached stage. The job's queued time travels on the
// instance (runner.Instance.JobQueuedAt, set at admission), so no stage
// reads the ledger: warm runners (no job) and instances written by an
// older release (no time) are not reported. A job served by several
// instances in turn (its first one failed) reports a stage once per
// instance that reached it.
func (lg *Ledger) jobWaited(inst *runner.Instance, stage QueueStage) {
	if inst == nil || inst.JobID == 0 || inst.JobQueuedAt.IsZero() {
		return
	}
	lg.observer.JobWaited(inst.Pool, stage, lg.now().Sub(inst.JobQueuedAt))
}
