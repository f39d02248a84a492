package listener_test

import (
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
