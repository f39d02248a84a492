package engine_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/providers/simulated"
)

// whyFirstLine is runfleet why's first line for job id, and its verdict.
func whyFirstLine(t *testing.T, w *enginetest.World, id int64) (string, string) {
	t.Helper()
	tl, err := w.Engine.Why(context.Background(), id)
	if err != nil {
		t.Fatalf("why %d: %v", id, err)
	}
	var b bytes.Buffer
	if err := tl.Text(&b); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(b.String(), "\n")
	return first, tl.Answer.Reason
}

func requireWhy(t *testing.T, w *enginetest.World, id int64, reason string, facts ...string) {
	t.Helper()
	line, got := whyFirstLine(t, w, id)
	if got != reason {
		t.Errorf("why %d: %s (%q), want %s", id, got, line, reason)
	}
	for _, f := range facts {
		if !strings.Contains(line, f) {
			t.Errorf("why %d: first line %q does not say %q", id, line, f)
		}
	}
}

// runfleet why, driven through the engine: the first line names the real
// reason for a job that matches no pool, one waiting for capacity, one
// waiting for GitHub's budget, one whose create keeps failing, a running
// one, a finished one and one runfleet never heard of.
func TestWhyNamesTheRealReason(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{Pools: enginetest.OnePool(func(p *runner.Pool) { p.MaxRunners = 1 })})
	w.StartWorkers(1)

	requireWhy(t, w, 5999, engine.WhyUnknown, "Job 5999: runfleet has no record of job 5999", "delivery")

	unmatched := enginetest.Event(runner.ActionQueued, 5001, "")
	unmatched.Labels = []string{"self-hosted", "linux", "x46"}
	w.Deliver(unmatched)
	requireWhy(t, w, 5001, string(runner.WaitUnmatched), "matches no pool", "no pool has x46", "the nearest pool, "+enginetest.Pool+", lacks x46")

	w.Deliver(enginetest.Event(runner.ActionQueued, 5002, ""))
	w.WaitStatus(enginetest.InstanceName(5002), runner.StatusRunning)
	requireWhy(t, w, 5002, string(runner.WaitBooting), "runner "+enginetest.InstanceName(5002)+" booting since")

	w.Deliver(enginetest.Event(runner.ActionQueued, 5003, ""))
	w.Drain()
	requireWhy(t, w, 5003, string(runner.WaitCapacity), "waits for capacity: pool "+enginetest.Pool+" at max_runners 1/1")

	w.Deliver(enginetest.Event(runner.ActionInProgress, 5002, enginetest.InstanceName(5002)))
	requireWhy(t, w, 5002, engine.WhyServed, "served by runner "+enginetest.InstanceName(5002))
	done := enginetest.Event(runner.ActionCompleted, 5002, enginetest.InstanceName(5002))
	done.Conclusion = "success"
	w.Deliver(done)
	requireWhy(t, w, 5002, engine.WhyCompleted, "completed (success)")
}

func TestWhyWaitingForGitHubsBudget(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	until := time.Now().Add(time.Hour)
	w.GitHub.FailNext(ghsim.OpGenerateJITConfig, &github.RateLimitError{RetryAt: until})
	w.Deliver(enginetest.Event(runner.ActionQueued, 5101, ""))
	w.Drain()
	requireWhy(t, w, 5101, string(runner.WaitGitHubBudget), "waits for GitHub's API budget until", "to create runner "+enginetest.InstanceName(5101))
}

func TestWhyCreateKeepsFailing(t *testing.T) {
	// A stopped clock: on a running one a busy machine can reach the end of
	// the backoff before the question is asked, and the answer is then
	// rightly "being created" (issue #30: no test depends on its speed).
	clock := testclock.At(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))
	w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now, Faults: simulated.Faults{AlwaysFailCreate: true}})
	w.Deliver(enginetest.Event(runner.ActionQueued, 5201, ""))
	w.Drain()
	line, reason := whyFirstLine(t, w, 5201)
	if reason != string(runner.WaitCreateBackoff) || !strings.Contains(line, "create to be retried at") || !strings.Contains(line, "fault") {
		t.Errorf("why of a job whose create keeps failing: %s %q; want create_backoff naming the fault", reason, line)
	}
}

// The timeline of a finished job: its ledger lines on runfleet's clock
// and in order (GitHub's completed_at, from a payload dated long before
// runfleet received it, is a note naming its clock), no "live one" for
// its deleted instance and no next instance for a closed job.
func TestWhyTimelineOfAFinishedJob(t *testing.T) {
	received := time.Date(2026, 12, 7, 3, 46, 27, 0, time.UTC)
	payloadDate := time.Date(2024, 5, 14, 9, 13, 36, 0, time.UTC)
	job := &runner.Job{ID: 7000000001, RunAttempt: 1, Pool: "linux", Status: runner.JobClosed, Conclusion: "success",
		RunnerName: "rf-1", Made: 1, QueuedAt: received, StatusChangedAt: received.Add(2 * time.Second),
		CompletedAt: payloadDate, NextAttemptAt: received.Add(3 * time.Second), Delivery: "d1", DeliverySource: "webhook"}
	job.Instance = job.InstanceFor(1)
	deleted := &runner.Instance{Name: job.Instance, Pool: "linux", Status: runner.StatusDeleted, RunnerStatus: runner.RunnerTerminated,
		StatusChangedAt: received.Add(2 * time.Second)}
	tl := &engine.Timeline{JobID: job.ID, At: received.Add(time.Second), Attempts: []*runner.Job{job}, Instances: []*runner.Instance{deleted}}
	tl.Answer = engine.DecideWhy(engine.WhyFacts{JobID: job.ID, Job: job, Instances: tl.Instances, Now: tl.At})
	var b bytes.Buffer
	if err := tl.Text(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, never := range []string{"live one: " + job.Instance, "next instance not before"} {
		if strings.Contains(text, never) {
			t.Errorf("the timeline says %q:\n%s", never, text)
		}
	}
	for _, want := range []string{"live one: none", "GitHub dates its completion " + payloadDate.Format(time.RFC3339) + " (GitHub's clock)",
		"status closed: GitHub reported it completed (success)"} {
		if !strings.Contains(text, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, text)
		}
	}
	var last time.Time
	for _, line := range strings.Split(text, "\n") {
		stampText, _, ok := strings.Cut(strings.TrimSpace(line), "  ")
		at, err := time.Parse(time.RFC3339, stampText)
		if !ok || err != nil {
			continue
		}
		if at.Before(last) {
			t.Errorf("the timeline runs backwards at %q:\n%s", line, text)
		}
		last = at
	}
	if last.IsZero() {
		t.Errorf("no dated line:\n%s", text)
	}
}

// An open job keeps its next instance's time while it is ahead; the
// instance it names is live only while it is.
func TestWhyTimelineOfABackingOffJob(t *testing.T) {
	at := time.Date(2026, 12, 7, 3, 46, 30, 0, time.UTC)
	job := &runner.Job{ID: 7000000004, RunAttempt: 1, Pool: "busy", Status: runner.JobOpen, Made: 1,
		QueuedAt: at.Add(-3 * time.Second), StatusChangedAt: at.Add(-3 * time.Second), NextAttemptAt: at.Add(time.Second)}
	job.Instance = job.InstanceFor(1)
	gone := &runner.Instance{Name: job.Instance, Pool: "busy", Status: runner.StatusDeleted,
		ProviderFault: `github: runner is still running a job: 422: runner "x" is still running a job`}
	tl := &engine.Timeline{JobID: job.ID, At: at, Attempts: []*runner.Job{job}, Instances: []*runner.Instance{gone}}
	tl.Answer = engine.DecideWhy(engine.WhyFacts{JobID: job.ID, Job: job, Instances: tl.Instances, Now: at,
		Pool: runner.PoolSlots{Configured: true, MaxRunners: 2}})
	var b bytes.Buffer
	if err := tl.Text(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{"Job 7000000004: waits for backoff until", "GitHub answered 422", "live one: none",
		"next instance not before " + job.NextAttemptAt.Format(time.RFC3339)} {
		if !strings.Contains(text, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "provider backoff") {
		t.Errorf("GitHub's 422 called a provider backoff:\n%s", text)
	}
}

// A replica that died mid-create leaves its instance creating: why names
// the moment the reconciler takes the create over — the pool's bootstrap
// timeout (the creating bound when none is set) plus the takeover grace,
// from when the instance entered creating.
func TestWhySaysWhenAStaleCreateIsTakenOver(t *testing.T) {
	clock := testclock.At(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))
	w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now})
	since := clock.Now().Add(-10 * time.Second)
	job := &runner.Job{ID: 5301, RunAttempt: 1, Pool: enginetest.Pool, Owner: runner.Owner{Org: enginetest.Owner}, Labels: enginetest.Labels(),
		Status: runner.JobOpen, Made: 1, QueuedAt: since, CreatedAt: since, UpdatedAt: since, StatusChangedAt: since}
	job.Instance = job.InstanceFor(1)
	inst := &runner.Instance{Name: job.Instance, Pool: job.Pool, Status: runner.StatusCreating, RunnerStatus: runner.RunnerPending,
		JobID: job.ID, RunAttempt: 1, Owner: job.Owner, CreatedAt: since, UpdatedAt: since, StatusChangedAt: since}
	if err := w.Store.CreateInstance(context.Background(), store.Admission{Instance: inst, MaxRunners: 10, Job: job}); err != nil {
		t.Fatal(err)
	}
	takeover := since.Add(time.Minute + engine.DefaultTakeoverGrace)
	requireWhy(t, w, job.ID, string(runner.WaitCreating), "being created", "takes the create over at "+takeover.Format(time.RFC3339))
}

// Where no engine is built (the Lambda operator function), the takeover
// moment comes from the options: known only when CreatingTimeout bounds
// every worker; the grace defaults as New defaults it.
func TestCreatingTakeoverFromTheOptions(t *testing.T) {
	if _, ok := (engine.Options{}).CreatingTakeover(); ok {
		t.Error("known without a CreatingTimeout")
	}
	if d, ok := (engine.Options{CreatingTimeout: 15 * time.Minute}).CreatingTakeover(); !ok || d != 15*time.Minute+engine.DefaultTakeoverGrace {
		t.Errorf("CreatingTakeover = %s, %t; want 15m plus the default grace", d, ok)
	}
	if d, _ := (engine.Options{CreatingTimeout: time.Minute, TakeoverGrace: 10 * time.Second}).CreatingTakeover(); d != 70*time.Second {
		t.Errorf("CreatingTakeover = %s, want 1m10s", d)
	}
}
