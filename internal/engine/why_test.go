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
	requireWhy(t, w, 5001, engine.WhyUnmatched, "matches no pool", "no pool has x46", "the nearest pool, "+enginetest.Pool+", lacks x46")

	w.Deliver(enginetest.Event(runner.ActionQueued, 5002, ""))
	w.WaitStatus(enginetest.InstanceName(5002), runner.StatusRunning)
	requireWhy(t, w, 5002, engine.WhyBooting, "runner "+enginetest.InstanceName(5002)+" booting since")

	w.Deliver(enginetest.Event(runner.ActionQueued, 5003, ""))
	w.Drain()
	requireWhy(t, w, 5003, engine.WhyCapacity, "waits for capacity: pool "+enginetest.Pool+" at max_runners 1/1")

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
	requireWhy(t, w, 5101, engine.WhyGitHubBudget, "waits for GitHub's API budget until", "to create runner "+enginetest.InstanceName(5101))
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
	if reason != engine.WhyProviderBackoff || !strings.Contains(line, "provider backoff until") || !strings.Contains(line, "fault") {
		t.Errorf("why of a job whose create keeps failing: %s %q; want provider backoff naming the fault", reason, line)
	}
}
