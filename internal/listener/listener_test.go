package listener_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
	"github.com/runfleet/runfleet/internal/runner"
)

// A job assigned through the scale set gets exactly one runner, runs on
// it, and closes; every message is acknowledged and the session is
// deleted when the listener stops.
func TestAssignedJobGetsExactlyOneRunner(t *testing.T) {
	r := newRig(t, scalesettest.Options{})
	r.start("replica-1")
	id := r.queue()
	r.runJob(id)
	r.drained()
	set, err := r.client.ScaleSetByID(r.ctx, r.setID)
	if err != nil || !slices.Contains(set.Labels, runner.ControllerLabel("ctl")) {
		t.Errorf("scale set labels %v (%v): want the controller's ownership label, which its runners show GitHub's list", set.Labels, err)
	}
	if n := r.creates(instanceFor(id)); n != 1 {
		t.Fatalf("%d creates for the job's runner, want 1: %v", n, r.w.Recorder.Calls())
	}
	r.w.WaitStatus(instanceFor(id), runner.StatusDeleted)
	if _, err := r.client.RunnerByName(r.ctx, instanceFor(id)); !errors.Is(err, scaleset.ErrRunnerNotFound) {
		t.Errorf("the runner is still registered in the scale set after its delete: %v", err)
	}
	r.stop("replica-1")
	if n := r.fake.Count(scalesettest.OpDeleteSession); n != 1 {
		t.Errorf("%d session deletes on the way out, want 1", n)
	}
	if _, session, last := r.state(); session != "" || last == 0 {
		t.Errorf("stored session %q, last message %d: want none and the last one acknowledged", session, last)
	}
}

// A message delivered twice (GitHub does it, even after its ack) makes
// nothing twice: the ledger is idempotent by job.
func TestMessageDeliveredTwiceMakesNothingTwice(t *testing.T) {
	r := newRig(t, scalesettest.Options{})
	r.fake.DeliverTwice()
	r.start("replica-1")
	id := r.queue()
	r.w.WaitFor("the first message delivered twice", func() bool { return r.fake.Deliveries(r.setID, 1) >= 2 })
	r.drained()
	r.runJob(id)
	r.w.Drain()
	if n := r.creates(instanceFor(id)); n != 1 {
		t.Fatalf("%d creates for the job's runner, want 1: %v", n, r.w.Recorder.Calls())
	}
}

// GitHub's re-assignment: JobAssigned, then JobCompleted(canceled) with no
// runner and JobAssigned again, three times. The job is never closed in
// between, its one runner is kept, and it runs on it.
func TestReassignmentEndsWithOneRunner(t *testing.T) {
	r := newRig(t, scalesettest.Options{})
	r.start("replica-1")
	id := r.queue()
	r.w.WaitStatus(instanceFor(id), runner.StatusRunning)
	for i := 0; i < scalesettest.MaxReassignments; i++ {
		if !r.fake.CancelAssignment(id) {
			t.Fatalf("re-assignment %d refused", i+1)
		}
		r.drained()
		if j := r.job(id); j == nil || j.Status != runner.JobOpen {
			t.Fatalf("after re-assignment %d the job is %+v, want open", i+1, j)
		}
	}
	r.runJob(id)
	r.w.Drain()
	if n := r.creates(instanceFor(id)); n != 1 {
		t.Fatalf("%d creates for the job's runner, want 1: %v", n, r.w.Recorder.Calls())
	}
}
