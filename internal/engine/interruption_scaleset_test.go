package engine_test

import (
	"testing"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/runner"
)

// scaleSetEvent is a scale-set job's event as the listener hands it over:
// the pool named, the ledger id a runner request's, no organization.
func scaleSetEvent(action runner.JobAction, id int64, runnerName string) runner.JobEvent {
	ev := enginetest.Event(action, id, runnerName)
	ev.Pool, ev.Org, ev.InstallationID = enginetest.Pool, "", 0
	return ev
}

// A scale-set job a spot interruption failed is re-run exactly once, by
// the REST id of the job its runner ran in its run — the scale set's
// messages never name that id — and GitHub is never asked about the
// ledger's id.
func TestAnInterruptedScaleSetJobIsReRunByItsRESTID(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	id := runner.ScaleSetJobID(77)
	const restID = 4242
	w.Deliver(scaleSetEvent(runner.ActionQueued, id, ""))
	w.Drain()
	name := enginetest.InstanceName(id)
	inst := w.Instance(name)
	if inst.Status != runner.StatusRunning {
		t.Fatalf("the scale-set job's instance: %+v", inst)
	}
	w.GitHub.StartJob(restID, name)
	w.Deliver(scaleSetEvent(runner.ActionInProgress, id, name))
	interrupt(t, w, spotNotice(w.Instance(name)), engine.InterruptionMarked)

	w.GitHub.FinishJob(restID, "failure")
	failed := scaleSetEvent(runner.ActionCompleted, id, name)
	failed.Conclusion = "failure"
	w.Deliver(failed)
	w.Deliver(failed)
	w.Drain()

	if n := w.GitHub.Reruns(restID); n != 1 {
		t.Fatalf("GitHub re-ran the REST job %d %d times, want exactly 1", restID, n)
	}
	if n := w.GitHub.Reruns(id); n != 0 {
		t.Fatalf("GitHub was asked to re-run the ledger's id %d", id)
	}
	if n := w.GitHub.Calls(ghsim.OpGetJob); n != 0 {
		t.Fatalf("GitHub was asked %d times about a job by the ledger's id", n)
	}
	job := w.Job(id)
	if job.Status != runner.JobClosed || job.RerunOutcome != runner.RerunDone {
		t.Fatalf("the scale-set job after its re-run: %+v", job)
	}
}

// A scale-set job whose run lists no job its runner ran is not re-run on
// a guess: the outcome is failed, for an operator to re-run by hand.
func TestAnInterruptedScaleSetJobNotInItsRunIsNotReRun(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	id := runner.ScaleSetJobID(78)
	w.Deliver(scaleSetEvent(runner.ActionQueued, id, ""))
	w.Drain()
	name := enginetest.InstanceName(id)
	w.Deliver(scaleSetEvent(runner.ActionInProgress, id, name))
	interrupt(t, w, spotNotice(w.Instance(name)), engine.InterruptionMarked)
	failed := scaleSetEvent(runner.ActionCompleted, id, name)
	failed.Conclusion = "failure"
	w.Deliver(failed)
	w.Drain()
	if job := w.Job(id); job.Status != runner.JobClosed || job.RerunOutcome != runner.RerunFailed {
		t.Fatalf("job = %+v, want closed with the re-run failed", job)
	}
	if n := w.GitHub.Calls(ghsim.OpRerunJob); n != 0 {
		t.Fatalf("%d re-run calls, want none", n)
	}
}
