package simulated_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/testclock"
)

func jobRef(id int64) github.JobRef {
	return github.JobRef{Owner: org, Repository: "octo-org/app", ID: id}
}

func getJob(t *testing.T, g *simulated.GitHub, id int64) github.Job {
	t.Helper()
	job, err := g.GetJob(context.Background(), jobRef(id))
	if err != nil {
		t.Fatalf("GetJob(%d): %v", id, err)
	}
	return *job
}

func TestJobNeverToldAboutIsQueued(t *testing.T) {
	g := simulated.New()
	if got, want := getJob(t, g, 77), (github.Job{ID: 77, RunAttempt: 1, Status: github.JobQueued}); got != want {
		t.Fatalf("unknown job = %+v, want %+v", got, want)
	}
	if g.Calls(simulated.OpGetJob) != 1 {
		t.Errorf("GetJob calls = %d, want 1", g.Calls(simulated.OpGetJob))
	}
}

func TestSetAndDeleteJob(t *testing.T) {
	g := simulated.New()
	g.SetJob(5, github.JobCompleted, "cancelled", "runfleet-x")
	want := github.Job{ID: 5, RunAttempt: 1, Status: github.JobCompleted, Conclusion: "cancelled", RunnerName: "runfleet-x"}
	if got := getJob(t, g, 5); got != want {
		t.Fatalf("job = %+v, want %+v", got, want)
	}
	g.DeleteJob(5)
	if _, err := g.GetJob(context.Background(), jobRef(5)); !errors.Is(err, github.ErrJobNotFound) {
		t.Fatalf("deleted job: %v, want ErrJobNotFound", err)
	}
	g.SetJob(5, github.JobWaiting, "", "")
	if got := getJob(t, g, 5); got.Status != github.JobWaiting {
		t.Fatalf("job set again = %+v", got)
	}
}

// The job ledger's case: a runner whose job ended although no completed
// webhook came. GitHub shows the runner busy while the job runs; then the
// JIT runner is gone and the job completed.
func TestStartAndFinishJobMoveTheRunnerToo(t *testing.T) {
	ctx := context.Background()
	g := simulated.New()
	cfg := register(t, g, org, "runfleet-j-1")
	if !g.StartJob(9, "runfleet-j-1") {
		t.Fatal("StartJob did not find the runner")
	}
	if got := getJob(t, g, 9); got.Status != github.JobInProgress || got.RunnerName != "runfleet-j-1" {
		t.Fatalf("started job = %+v", got)
	}
	runners, _ := g.ListRunners(ctx, org)
	if len(runners) != 1 || !runners[0].Busy || runners[0].Status != simulated.StatusOnline {
		t.Fatalf("runner during the job = %+v", runners)
	}
	if err := g.RemoveRunner(ctx, github.RunnerRef{Owner: org, ID: cfg.RunnerID}); !errors.Is(err, github.ErrRunnerBusy) {
		t.Fatalf("removing the busy runner: %v", err)
	}

	if !g.FinishJob(9, "success") {
		t.Fatal("FinishJob did not find the runner")
	}
	if got := getJob(t, g, 9); got.Status != github.JobCompleted || got.Conclusion != "success" || got.RunnerName != "runfleet-j-1" {
		t.Fatalf("finished job = %+v", got)
	}
	if runners, _ := g.ListRunners(ctx, org); len(runners) != 0 {
		t.Fatalf("the JIT runner is still registered: %+v", runners)
	}
	if g.FinishJob(9, "success") {
		t.Error("a second FinishJob found a runner")
	}
	if g.StartJob(10, "nobody") {
		t.Error("StartJob reported a runner that does not exist")
	}
	if got := getJob(t, g, 10); got.Status != github.JobInProgress || got.RunnerName != "nobody" {
		t.Errorf("a job taken by a runner not registered here = %+v", got)
	}
}

func TestGetJobFaults(t *testing.T) {
	ctx := context.Background()
	g := simulated.New()
	boom := errors.New("simulated 502")
	g.FailNext(simulated.OpGetJob, boom)
	if _, err := g.GetJob(ctx, jobRef(1)); !errors.Is(err, boom) {
		t.Fatalf("injected failure: %v", err)
	}
	getJob(t, g, 1) // one failure per injection

	clock := testclock.At(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	g.SetNow(clock.Now)
	g.RateLimit(clock.Now().Add(time.Minute))
	var rl *github.RateLimitError
	if _, err := g.GetJob(ctx, jobRef(1)); !errors.As(err, &rl) {
		t.Fatalf("rate limited: %v", err)
	}
	g.RateLimit(time.Time{})
	if g.Calls(simulated.OpGetJob) != 3 {
		t.Errorf("GetJob calls = %d, want 3: failed calls spend budget too", g.Calls(simulated.OpGetJob))
	}

	for _, ref := range []github.JobRef{
		{Repository: "octo-org/app", ID: 1},
		{Owner: org, Repository: "octo-org", ID: 1},
		{Owner: org, Repository: "octo-org/app/x", ID: 1},
		{Owner: org, Repository: "octo-org/app"},
	} {
		if _, err := g.GetJob(ctx, ref); err == nil || errors.Is(err, github.ErrJobNotFound) {
			t.Errorf("%+v: %v, want a refusal", ref, err)
		}
	}
}

func TestJobsConcurrently(t *testing.T) {
	ctx := context.Background()
	g := simulated.New()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 25 {
				id := int64(w*100 + i + 1)
				name := fmt.Sprintf("runfleet-c-%d", id)
				if _, err := g.GenerateJITConfig(ctx, jit(org, name)); err != nil {
					t.Error(err) // not Fatal: this is not the test's goroutine
					return
				}
				g.StartJob(id, name)
				if _, err := g.GetJob(ctx, jobRef(id)); err != nil {
					t.Error(err)
					return
				}
				g.FinishJob(id, "success")
			}
		})
	}
	wg.Wait()
	if n := len(g.Runners()); n != 0 {
		t.Errorf("%d runners left after every job finished", n)
	}
	if g.Calls(simulated.OpGetJob) != 100 {
		t.Errorf("GetJob calls = %d", g.Calls(simulated.OpGetJob))
	}
}
