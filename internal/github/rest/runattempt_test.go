package rest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/githubtest"
)

// The run's latest attempt is what tells a repeated re-run call whether
// the first took effect: 1 before a re-run, 2 after; an unknown run is
// ErrJobNotFound.
func TestLatestRunAttemptFollowsReRuns(t *testing.T) {
	srv := fakeGitHub(t)
	c := jobClient(t, srv, newClock())
	ctx := context.Background()
	first := srv.AddJob(githubtest.Job{ID: 7101, Repo: testRepo, Labels: []string{"self-hosted"}})
	srv.SetJob(7101, githubtest.JobCompleted, "failure", "runfleet-spot-7101-1")
	ref := jobRef(7101)
	run := github.RunRef{Owner: ref.Owner, Repository: ref.Repository, ID: first.RunID}
	if got, err := c.LatestRunAttempt(ctx, run); err != nil || got != 1 {
		t.Fatalf("LatestRunAttempt before a re-run = %d, %v; want 1", got, err)
	}
	if err := c.RerunJob(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if got, err := c.LatestRunAttempt(ctx, run); err != nil || got != 2 {
		t.Fatalf("LatestRunAttempt after a re-run = %d, %v; want 2", got, err)
	}
	run.ID = 404
	if _, err := c.LatestRunAttempt(ctx, run); !errors.Is(err, github.ErrJobNotFound) {
		t.Fatalf("unknown run: %v, want ErrJobNotFound", err)
	}
}
