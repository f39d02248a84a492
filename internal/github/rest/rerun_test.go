package rest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/githubtest"
)

// A re-run makes a new attempt of the run, queued under a new job id; a
// second re-run while that attempt is going is refused as such (not as a
// missing permission), and goes through again once it has completed.
func TestRerunJobStartsOneAttemptAndIsRefusedWhileItRuns(t *testing.T) {
	srv := fakeGitHub(t)
	c := jobClient(t, srv, newClock())
	ctx := context.Background()
	first := srv.AddJob(githubtest.Job{ID: 7001, Repo: testRepo, Labels: []string{"self-hosted"}})
	srv.SetJob(7001, githubtest.JobCompleted, "failure", "runfleet-spot-7001-1")

	if err := c.RerunJob(ctx, jobRef(7001)); err != nil {
		t.Fatalf("RerunJob: %v", err)
	}
	jobs := srv.RunJobs(first.RunID)
	if len(jobs) != 2 || jobs[1].RunAttempt != 2 || jobs[1].Status != githubtest.JobQueued || jobs[1].ID == 7001 {
		t.Fatalf("run jobs after a re-run = %+v, want the old job and one queued job of attempt 2 with a new id", jobs)
	}

	err := c.RerunJob(ctx, jobRef(7001))
	var denied *github.PermissionError
	if !errors.Is(err, github.ErrRerunRefused) || errors.As(err, &denied) {
		t.Fatalf("second RerunJob = %v, want ErrRerunRefused and no PermissionError", err)
	}
	if n := len(srv.RunJobs(first.RunID)); n != 2 {
		t.Fatalf("a refused re-run made an attempt: %d jobs", n)
	}

	srv.SetJob(jobs[1].ID, githubtest.JobCompleted, "success", "")
	if err := c.RerunJob(ctx, jobRef(7001)); err != nil {
		t.Fatalf("RerunJob after the re-run completed: %v", err)
	}
	if jobs := srv.RunJobs(first.RunID); len(jobs) != 3 || jobs[2].RunAttempt != 3 {
		t.Fatalf("run jobs = %+v, want attempt 3", jobs)
	}
}

func TestRerunJobErrorsAreTyped(t *testing.T) {
	srv := fakeGitHub(t)
	c := jobClient(t, srv, newClock())
	ctx := context.Background()
	if err := c.RerunJob(ctx, jobRef(404)); !errors.Is(err, github.ErrJobNotFound) {
		t.Errorf("unknown job: %v, want ErrJobNotFound", err)
	}
	srv.AddJob(githubtest.Job{ID: 7002, Repo: testRepo})
	srv.SetJob(7002, githubtest.JobCompleted, "failure", "")
	srv.Inject(githubtest.RouteRerunJob, githubtest.Forbidden().Times(1))
	err := c.RerunJob(ctx, jobRef(7002))
	var denied *github.PermissionError
	if !errors.As(err, &denied) || errors.Is(err, github.ErrRerunRefused) || !errors.Is(err, github.ErrMisconfigured) {
		t.Fatalf("no permission: %v, want a *PermissionError (misconfigured), not a refused re-run", err)
	}
	if err := c.RerunJob(ctx, github.JobRef{Owner: jobOwner, Repository: "not a repo", ID: 7002}); err == nil {
		t.Error("a malformed repository was sent")
	}
}
