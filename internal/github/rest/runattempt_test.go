package rest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/githubtest"
)

// A run's jobs of every attempt are what tell a repeated re-run call
// whether the first took effect (attempt 1 before a re-run, 2 after) and
// which job a runner ran; an unknown run is ErrJobNotFound.
func TestRunJobsFollowReRuns(t *testing.T) {
	srv := fakeGitHub(t)
	c := jobClient(t, srv, newClock())
	ctx := context.Background()
	first := srv.AddJob(githubtest.Job{ID: 7101, Repo: testRepo, Labels: []string{"self-hosted"}})
	srv.SetJob(7101, githubtest.JobCompleted, "failure", "runfleet-spot-7101-1")
	ref := jobRef(7101)
	run := github.RunRef{Owner: ref.Owner, Repository: ref.Repository, ID: first.RunID}
	jobs, err := c.RunJobs(ctx, run)
	if err != nil || github.LatestAttempt(jobs) != 1 {
		t.Fatalf("RunJobs before a re-run = %v, %v; want attempt 1", jobs, err)
	}
	if j, ok := github.JobRanBy(jobs, "RUNFLEET-spot-7101-1"); !ok || j.ID != 7101 || j.Conclusion != "failure" {
		t.Fatalf("the job runfleet-spot-7101-1 ran = %+v, %v; want job 7101, failed", j, ok)
	}
	if err := c.RerunJob(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if jobs, err = c.RunJobs(ctx, run); err != nil || github.LatestAttempt(jobs) != 2 {
		t.Fatalf("RunJobs after a re-run = %v, %v; want attempt 2", jobs, err)
	}
	if _, ok := github.JobRanBy(jobs, "runfleet-other"); ok {
		t.Fatal("a job was found for a runner that ran none")
	}
	run.ID = 404
	if _, err := c.RunJobs(ctx, run); !errors.Is(err, github.ErrJobNotFound) {
		t.Fatalf("unknown run: %v, want ErrJobNotFound", err)
	}
}
