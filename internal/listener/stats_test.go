package listener_test

import (
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
	"github.com/runfleet/runfleet/internal/runner"
)

// A job canceled before any runner took it, and not assigned again, is
// recorded waiting like a re-assignment; once GitHub's statistics have
// not counted it for the grace period it is closed and its idle runner
// deleted — not kept until the job would expire.
func TestJobCanceledForGoodIsClosedByTheStatistics(t *testing.T) {
	r := newRig(t, scalesettest.Options{})
	l := r.start("replica-1")
	kept := r.queue()
	canceled := r.queue()
	r.w.WaitStatus(instanceFor(canceled), runner.StatusRunning)
	if err := r.fake.CompleteJob(canceled, scaleset.ResultCanceled); err != nil {
		t.Fatal(err)
	}
	r.waitJob(canceled, runner.JobWaiting)
	waitingAt := time.Now()
	r.waitJob(canceled, runner.JobClosed)
	if d := time.Since(waitingAt); d < statsGrace/2 {
		t.Errorf("closed %v after it started waiting, before the grace period (%v)", d, statsGrace)
	}
	r.w.WaitStatus(instanceFor(canceled), runner.StatusDeleted)
	if j := r.job(kept); j.Status != runner.JobOpen {
		t.Fatalf("the job GitHub still has waiting is %s, want open", j.Status)
	}
	r.w.WaitFor("the ledger agreeing with GitHub", func() bool {
		d, ok := l.Demand()
		return ok && d.Missing() == 0 && d.Open == 1
	})
	r.runJob(kept)
}

// A listener that reads no message — a quiet queue after a restart, or a
// Lambda invocation after the one that read the cancel — takes GitHub's
// statistics from the session it resumed, so a job canceled for good is
// still closed after the grace period.
func TestAListenerThatReadsNoMessageStillClosesAJobCanceledForGood(t *testing.T) {
	r := newRig(t, scalesettest.Options{})
	r.keepSession = true
	r.grace = time.Hour // the first listener reads the cancel but never closes
	r.start("tick-1")
	canceled := r.queue()
	r.w.WaitStatus(instanceFor(canceled), runner.StatusRunning)
	if err := r.fake.CompleteJob(canceled, scaleset.ResultCanceled); err != nil {
		t.Fatal(err)
	}
	r.waitJob(canceled, runner.JobWaiting)
	r.drained()
	r.stop("tick-1")

	polls := r.fake.CountStatus(scalesettest.OpGetMessage, 200)
	r.grace = 0
	r.start("tick-2")
	r.waitJob(canceled, runner.JobClosed)
	r.w.WaitStatus(instanceFor(canceled), runner.StatusDeleted)
	if n := r.fake.CountStatus(scalesettest.OpGetMessage, 200); n != polls {
		t.Fatalf("the second listener read %d messages, want none (the test is of a listener that reads none)", n-polls)
	}
	if !strings.Contains(r.w.Logs.String(), `"listener":"tick-2"`) {
		t.Error("no log line of the second listener")
	}
}

// Found by TestSimulationScaleSet (F23): a job canceled for good while
// the ledger already held another one GitHub no longer counted was never
// closed — only jobs waiting since before the excess began were, and its
// own excess kept that stretch from ever ending. Each is closed once it
// has waited the grace period.
func TestJobCanceledDuringAnotherOnesExcessIsClosedToo(t *testing.T) {
	r := newRig(t, scalesettest.Options{})
	r.start("replica-1")
	first, second := r.queue(), r.queue()
	r.w.WaitStatus(instanceFor(first), runner.StatusRunning)
	r.w.WaitStatus(instanceFor(second), runner.StatusRunning)
	if err := r.fake.CompleteJob(first, scaleset.ResultCanceled); err != nil {
		t.Fatal(err)
	}
	r.waitJob(first, runner.JobWaiting)
	time.Sleep(statsGrace / 2)
	if err := r.fake.CompleteJob(second, scaleset.ResultCanceled); err != nil {
		t.Fatal(err)
	}
	r.waitJob(second, runner.JobWaiting)
	r.waitJob(first, runner.JobClosed)
	r.waitJob(second, runner.JobClosed)
}

// Found by TestSimulationScaleSet (F25): GitHub deleted the scale set while
// its queue still held the message that canceled a job the ledger held
// open. The scale set the listener made again has a new queue, which
// never mentions the job: it stayed open, and the engine made runner
// after runner for it. Jobs open for the old scale set are paused when
// the scale set is a new one; the new one's JobAssigned reopens those
// GitHub assigns it again, and the statistics close the rest.
func TestJobsOfADeletedScaleSetAreNotStranded(t *testing.T) {
	r := newRig(t, scalesettest.Options{})
	r.start("replica-1")
	lost := r.queue()
	r.waitJob(lost, runner.JobOpen)
	r.stop("replica-1")
	if err := r.fake.CompleteJob(lost, scaleset.ResultCanceled); err != nil {
		t.Fatal(err)
	}
	r.fake.DeleteScaleSetServerSide(r.setID)
	r.start("replica-2")
	r.waitJob(lost, runner.JobClosed)
}
