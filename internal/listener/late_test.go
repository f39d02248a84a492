package listener_test

import (
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
	"github.com/runfleet/runfleet/internal/runner"
)

// The broker delivers a message again when it likes: after later
// messages, after its acknowledgement, after the job was canceled (issue
// #36). These tests play GitHub canceling a job nobody took yet, then a
// copy of one of its earlier messages: the job must stay as the cancel
// left it, and nothing more must be made or asked for it.

// lateRig is a rig whose statistics check never closes a waiting job
// during the test: what a late message does to the job is the engine's
// and the listener's alone.
func lateRig(t *testing.T, opts scalesettest.Options) *rig {
	r := newRig(t, opts)
	r.grace = time.Hour
	r.start("replica-1")
	return r
}

// cancelAfterAssignment queues a job, waits for its runner, then has
// GitHub cancel it for good: the job waits (GitHub might assign it
// again), its runner idle.
func cancelAfterAssignment(t *testing.T, r *rig) int64 {
	t.Helper()
	rr := r.queue()
	r.w.WaitStatus(instanceFor(rr), runner.StatusRunning)
	if !r.fake.CancelJob(rr) {
		t.Fatalf("job %d could not be canceled", rr)
	}
	r.waitJob(rr, runner.JobWaiting)
	r.drained()
	return rr
}

// deliverLate has the broker deliver the job's earliest message of kind
// again, then waits until the listener has handled it: a job queued after
// it is read after it.
func deliverLate(t *testing.T, r *rig, rr int64, kind string) int64 {
	t.Helper()
	ids := r.fake.MessagesAbout(r.setID, rr, kind)
	if len(ids) == 0 {
		t.Fatalf("no %s message about job %d", kind, rr)
	}
	if !r.fake.DeliverLate(r.setID, ids[0]) {
		t.Fatalf("message %d could not be delivered again", ids[0])
	}
	next := r.queue()
	r.waitJob(next, runner.JobOpen)
	if n := r.fake.Deliveries(r.setID, ids[0]); n < 2 {
		t.Fatalf("message %d delivered %d time(s), want the late copy too", ids[0], n)
	}
	return next
}

// assigned → canceled (JobCompleted, canceled, no runner) → the first
// JobAssigned again: the job is not queued again.
func TestLateAssignedAfterACancelReopensNothing(t *testing.T) {
	r := lateRig(t, scalesettest.Options{})
	rr := cancelAfterAssignment(t, r)
	deliverLate(t, r, rr, "JobAssigned")
	j := r.job(rr)
	if j.Status != runner.JobWaiting {
		t.Fatalf("after a late copy of its assignment, the canceled job is %s, want waiting (log:\n%s)", j.Status, r.w.Logs.Tail(30))
	}
	if j.Made != 1 || r.creates(j.InstanceFor(2)) != 0 {
		t.Fatalf("job made %d instances, want 1", j.Made)
	}
}

// The same with GHES's flow: JobAvailable, acquired, JobAssigned,
// canceled, then the JobAvailable again — not acquired a second time (the
// message was handled and acknowledged already), and nothing reopened.
func TestLateAvailableAfterACancelAcquiresNothing(t *testing.T) {
	r := lateRig(t, scalesettest.Options{AcquireRequired: true})
	rr := cancelAfterAssignment(t, r)
	acquires := r.fake.Count(scalesettest.OpAcquireJobs)
	next := deliverLate(t, r, rr, "JobAvailable")
	// The job queued after the late copy is acquired too; wait for it so
	// that the count below is final.
	r.w.WaitStatus(instanceFor(next), runner.StatusRunning)
	if got := r.fake.Count(scalesettest.OpAcquireJobs) - acquires; got != 1 {
		t.Fatalf("%d acquire calls after the cancel, want 1 (the job queued since): the late copy was acquired again", got)
	}
	if j := r.job(rr); j.Status != runner.JobWaiting || j.Made != 1 {
		t.Fatalf("after a late copy of its JobAvailable, the canceled job is %s with %d instances, want waiting with 1", j.Status, j.Made)
	}
}

// A late copy of the cancel after GitHub assigned the job again does not
// pause it: the runner GitHub waits for is still wanted.
func TestLateCancelAfterAReassignmentPausesNothing(t *testing.T) {
	r := lateRig(t, scalesettest.Options{})
	rr := r.queue()
	r.w.WaitStatus(instanceFor(rr), runner.StatusRunning)
	if !r.fake.CancelAssignment(rr) {
		t.Fatal("the assignment could not be taken back")
	}
	r.drained()
	r.waitJob(rr, runner.JobOpen)
	deliverLate(t, r, rr, "JobCompleted")
	if j := r.job(rr); j.Status != runner.JobOpen {
		t.Fatalf("after a late copy of the canceled assignment, the re-assigned job is %s, want open", j.Status)
	}
	r.runJob(rr)
}
