package engine_test

import (
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/runner"
)

// Waiting for GitHub's budget is not failing (issue #24): a JIT
// registration held by runfleet's pacing, or refused by GitHub's rate
// limit, more times than a create has attempts, uses none of them, records
// no fault, makes no replacement, and shows when it goes; once the budget
// allows, the one instance is created.
func TestCreateWaitingForGitHubsBudgetUsesNoAttempt(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	for i := range 5 {
		w.GitHub.FailNext(ghsim.OpGenerateJITConfig, &github.RateLimitError{
			RetryAt: time.Now().Add(30 * time.Millisecond), Paced: i%2 == 0, Secondary: i%2 == 1,
		})
	}
	w.Deliver(enginetest.Event(runner.ActionQueued, 3401, ""))
	w.Drain()
	name := enginetest.InstanceName(3401)
	got := w.Instance(name)
	if got.Status != runner.StatusPendingCreate || got.CreateAttempt != 0 || got.ProviderFault != "" || got.WaitingForGitHub.IsZero() {
		t.Fatalf("instance waiting for GitHub's budget: %+v; want pending_create, no attempt used, no fault, when it goes", got)
	}
	w.StartWorkers(2)
	created := w.WaitStatus(name, runner.StatusRunning)
	if created.CreateAttempt != 1 || !created.WaitingForGitHub.IsZero() {
		t.Fatalf("instance once the budget allowed it: %+v; want created on its first attempt", created)
	}
	w.StopWorkers()
	if job := w.Job(3401); job.Made != 1 || job.Instance != name {
		t.Fatalf("job after the waits: %+v; want its one instance, no replacement", job)
	}
	if n := w.GitHub.Calls(ghsim.OpGenerateJITConfig); n != 6 {
		t.Fatalf("JIT calls: %d, want the 5 held and 1 made", n)
	}
}
