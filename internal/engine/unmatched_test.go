package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
)

// A queued job whose labels no pool has is recorded, with why in words,
// listed with open demand, answered as before, and made no runner; the
// same delivery again changes nothing.
func TestUnmatchedJobIsRecordedWithItsReason(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	ev := enginetest.Event(runner.ActionQueued, 2101, "")
	ev.Labels = []string{"self-hosted", "linux", "x46"}
	for range 2 {
		if out := w.Deliver(ev); out.Result != engine.ResultNoMatchingPool || out.Reason != runner.UnmatchedLabels {
			t.Fatalf("outcome = %+v", out)
		}
	}
	job := w.Job(2101)
	if job.Status != runner.JobUnmatched || job.Pool != "" || job.Delivery != "delivery-1" || job.Version != 1 {
		t.Fatalf("job = %+v; want unmatched, no pool, delivery-1, written once", job)
	}
	for _, fact := range []string{"no pool has x46", "the nearest pool, " + enginetest.Pool + ", lacks x46"} {
		if !strings.Contains(job.UnmatchedDetail, fact) {
			t.Errorf("detail %q does not say %q", job.UnmatchedDetail, fact)
		}
	}
	open, err := w.Engine.ListOpenJobs(context.Background())
	if err != nil || len(open) != 1 || open[0].Key() != job.Key() {
		t.Fatalf("open jobs = %v, %v; want the unmatched job", open, err)
	}
	if live := w.Live(); len(live) != 0 {
		t.Fatalf("live instances = %v", live)
	}
	// GitHub-hosted jobs are not runfleet's: still only logged.
	hosted := enginetest.Event(runner.ActionQueued, 2102, "")
	hosted.Labels = []string{"ubuntu-latest"}
	w.Deliver(hosted)
	if _, err := w.Store.GetJob(context.Background(), runner.JobKey(2102, 1)); err == nil {
		t.Fatal("a GitHub-hosted job was recorded")
	}
}

// Fixing the config and redelivering the queued (or GitHub queueing it
// again) serves an unmatched job: it is opened in the pool that matches
// now and gets its runner.
func TestUnmatchedJobIsServedOnceAPoolMatches(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	ctx := context.Background()
	ev := enginetest.Event(runner.ActionQueued, 2201, "")
	// Recorded while no pool matched (the config then lacked this pool).
	recorded := &runner.Job{ID: 2201, RunAttempt: 1, Status: runner.JobUnmatched, Labels: ev.Labels,
		Repository: ev.Repository, UnmatchedReason: runner.UnmatchedLabels, UnmatchedDetail: "no pool has x64"}
	if err := w.Store.CreateJob(ctx, recorded); err != nil {
		t.Fatal(err)
	}
	if out := w.Deliver(ev); out.Result != engine.ResultCreated {
		t.Fatalf("outcome = %+v", out)
	}
	job := w.Job(2201)
	if job.Status != runner.JobOpen || job.Pool != enginetest.Pool || job.Instance != enginetest.InstanceName(2201) {
		t.Fatalf("job = %+v; want open in %s with its instance", job, enginetest.Pool)
	}
}

// An unmatched job settles like any job when GitHub reports it taken or
// completed: it leaves the open demand.
func TestUnmatchedJobSettlesOnCompleted(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	ev := enginetest.Event(runner.ActionQueued, 2301, "")
	ev.Labels = []string{"self-hosted", "gpu"}
	w.Deliver(ev)
	ev.Action, ev.Conclusion = runner.ActionCompleted, "cancelled"
	w.Deliver(ev)
	if job := w.Job(2301); job.Status != runner.JobClosed || job.Conclusion != "cancelled" {
		t.Fatalf("job = %+v; want closed, cancelled", job)
	}
}

// An unmatched job whose completed was never delivered does not stay
// listed until it expires: the reconciler asks GitHub about it every
// waitingRecheck, keeps it while GitHub still holds it queued, and
// settles it once GitHub says it completed.
func TestReconcilerSettlesAnUnmatchedJobGitHubCompleted(t *testing.T) {
	clock := &testclock.Clock{}
	w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now})
	ev := enginetest.Event(runner.ActionQueued, 2401, "")
	ev.Labels = []string{"self-hosted", "gpu"}
	w.Deliver(ev)
	reconcile := func() {
		t.Helper()
		clock.Advance(11 * time.Minute)
		if _, err := w.Engine.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	w.GitHub.SetJob(2401, "queued", "", "")
	reconcile()
	if job := w.Job(2401); job.Status != runner.JobUnmatched || job.Owner.Org != enginetest.Owner {
		t.Fatalf("job GitHub still holds queued: %+v; want unmatched, asked as %s", job, enginetest.Owner)
	}
	w.GitHub.SetJob(2401, "completed", "cancelled", "")
	reconcile()
	if job := w.Job(2401); job.Status != runner.JobClosed {
		t.Fatalf("job GitHub completed: %s, want closed", job.Status)
	}
}
