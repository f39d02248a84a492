package engine_test

import (
	"testing"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
)

// The webhook side of issue #36: a job canceled before any runner took
// it, then its queued delivered again (a redelivery, days later): the
// job is closed — final — so the late queued makes nothing, and the
// instance made for it is deleted once, not replaced.
func TestLateQueuedWebhookAfterACancelMakesNothing(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	w.StartWorkers(2)
	const id = 36_001
	name := enginetest.InstanceName(id)
	w.Deliver(enginetest.Event(runner.ActionQueued, id, ""))
	w.WaitStatus(name, runner.StatusRunning)
	canceled := enginetest.Event(runner.ActionCompleted, id, "")
	canceled.Conclusion = "cancelled"
	w.Deliver(canceled)
	w.WaitStatus(name, runner.StatusDeleted)
	if out := w.Deliver(enginetest.Event(runner.ActionQueued, id, "")); out.Result != engine.ResultJobSettled {
		t.Fatalf("a late queued after the cancel: %+v, want %s", out, engine.ResultJobSettled)
	}
	w.Drain()
	if job := w.Job(id); job.Status != runner.JobClosed || job.Made != 1 {
		t.Fatalf("job is %s with %d instances made, want closed with 1", job.Status, job.Made)
	}
	if got := w.Provider.CreateCalls(name); got != 1 {
		t.Fatalf("provider creates for %s = %d, want 1", name, got)
	}
}
