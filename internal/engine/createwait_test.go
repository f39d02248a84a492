package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
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
	ctx := context.Background()
	name := enginetest.InstanceName(3401)
	create, err := engine.EncodeMessage(engine.Message{Kind: engine.KindCreate, Instance: name, JobID: 3401})
	if err != nil {
		t.Fatal(err)
	}
	hold := func(i int) {
		// Far off, so the create's own retry is not due during the test:
		// each try below is the retry's delivery.
		w.GitHub.FailNext(ghsim.OpGenerateJITConfig, &github.RateLimitError{
			RetryAt: time.Now().Add(time.Hour), Paced: i%2 == 0, Secondary: i%2 == 1,
		})
	}
	hold(0)
	w.Deliver(enginetest.Event(runner.ActionQueued, 3401, ""))
	w.Drain()
	for i := 1; i < 5; i++ {
		hold(i)
		if err := w.Engine.HandleMessage(ctx, create); err != nil {
			t.Fatal(err)
		}
	}
	got := w.Instance(name)
	if got.Status != runner.StatusPendingCreate || got.CreateAttempt != 0 || got.ProviderFault != "" || got.WaitingForGitHub.Before(time.Now().Add(50*time.Minute)) {
		t.Fatalf("instance held 5 times for GitHub's budget: %+v; want pending_create, no attempt used, no fault, going in an hour", got)
	}
	if err := w.Engine.HandleMessage(ctx, create); err != nil {
		t.Fatal(err)
	}
	created := w.Instance(name)
	if created.Status != runner.StatusRunning || created.CreateAttempt != 1 || !created.WaitingForGitHub.IsZero() {
		t.Fatalf("instance once the budget allowed it: %+v; want created on its first attempt", created)
	}
	if job := w.Job(3401); job.Made != 1 || job.Instance != name {
		t.Fatalf("job after the waits: %+v; want its one instance, no replacement", job)
	}
	if n := w.GitHub.Calls(ghsim.OpGenerateJITConfig); n != 6 {
		t.Fatalf("JIT calls: %d, want the 5 held and 1 made", n)
	}
}
