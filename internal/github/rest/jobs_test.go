package rest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/testclock"
)

// jobClient is the App client with no default installation: every call
// must authenticate as the installation its owner names.
func jobClient(t *testing.T, srv *githubtest.Server, clock *testclock.Clock) *rest.Client {
	t.Helper()
	c, err := rest.New(rest.Options{BaseURL: srv.GHESURL(), AppID: testAppID, PrivateKey: appKey().PrivateKeyPEM, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newClock is a clock tests move by hand, so rate-limit waits are
// compared exactly and never measured.
func newClock() *testclock.Clock {
	return testclock.At(time.Now().UTC().Truncate(time.Second))
}

var jobOwner = github.Owner{Org: testOrg, InstallationID: testInstallationID}

func jobRef(id int64) github.JobRef {
	return github.JobRef{Owner: jobOwner, Repository: testRepo, ID: id}
}

func TestGetJobReportsEachState(t *testing.T) {
	srv := fakeGitHub(t)
	c := jobClient(t, srv, newClock())
	ctx := context.Background()
	srv.AddJob(githubtest.Job{ID: 6001, RunAttempt: 2, Repo: testRepo})

	steps := []struct {
		set  func()
		want github.Job
	}{
		{func() {}, github.Job{ID: 6001, RunAttempt: 2, Status: github.JobQueued}},
		{func() { srv.SetJob(6001, githubtest.JobInProgress, "", "runfleet-linux-6001-2") },
			github.Job{ID: 6001, RunAttempt: 2, Status: github.JobInProgress, RunnerName: "runfleet-linux-6001-2"}},
		{func() { srv.SetJob(6001, githubtest.JobCompleted, "failure", "runfleet-linux-6001-2") },
			github.Job{ID: 6001, RunAttempt: 2, Status: github.JobCompleted, Conclusion: "failure", RunnerName: "runfleet-linux-6001-2"}},
		{func() { srv.SetJob(6001, githubtest.JobWaiting, "", "") },
			github.Job{ID: 6001, RunAttempt: 2, Status: github.JobWaiting}},
	}
	for _, step := range steps {
		step.set()
		got, err := c.GetJob(ctx, jobRef(6001))
		if err != nil {
			t.Fatal(err)
		}
		if *got != step.want {
			t.Errorf("GetJob = %+v, want %+v", *got, step.want)
		}
	}

	calls := c.Calls()
	if calls.ByOperation[rest.OpGetJob] != 4 || calls.API() != 4 {
		t.Errorf("calls %+v, want 4 counted as %s", calls, rest.OpGetJob)
	}
	if n := srv.CallCount(githubtest.RouteWorkflowJob); n != 4 {
		t.Errorf("GitHub answered %d job calls, want 4", n)
	}
	for _, call := range srv.Calls() {
		if call.Route == githubtest.RouteWorkflowJob && call.Identity != "installation:777" {
			t.Errorf("job read as %q, want the owner's installation", call.Identity)
		}
	}
}

func TestGetJobUnknownIsErrJobNotFound(t *testing.T) {
	srv := fakeGitHub(t)
	c := jobClient(t, srv, newClock())
	ctx := context.Background()
	srv.AddJob(githubtest.Job{ID: 6002, Repo: "octo-org/other-repo"})
	for _, ref := range []github.JobRef{jobRef(6003), jobRef(6002)} {
		_, err := c.GetJob(ctx, ref)
		if !errors.Is(err, github.ErrJobNotFound) {
			t.Fatalf("job %d in %s: %v, want ErrJobNotFound", ref.ID, ref.Repository, err)
		}
		var rl *github.RateLimitError
		if errors.As(err, &rl) || errors.Is(err, github.ErrMisconfigured) {
			t.Errorf("a 404 is neither a rate limit nor a misconfiguration: %v", err)
		}
	}
}

func TestGetJobFaultsAreThePortsErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("5xx", func(t *testing.T) {
		srv := fakeGitHub(t)
		c := jobClient(t, srv, newClock())
		srv.AddJob(githubtest.Job{ID: 6010, Repo: testRepo})
		srv.Inject(githubtest.RouteWorkflowJob, githubtest.ServerError(503).Times(1))
		_, err := c.GetJob(ctx, jobRef(6010))
		var rl *github.RateLimitError
		var pe *github.PermissionError
		if err == nil || errors.Is(err, github.ErrJobNotFound) || errors.As(err, &rl) || errors.As(err, &pe) || !strings.Contains(err.Error(), "503") {
			t.Fatalf("503: %v, want a plain error naming the status", err)
		}
		if job, err := c.GetJob(ctx, jobRef(6010)); err != nil || job.Status != github.JobQueued {
			t.Fatalf("after a 5xx the next call goes through: %+v %v", job, err)
		}
	})
	t.Run("429 retry-after", func(t *testing.T) {
		srv := fakeGitHub(t)
		clock := newClock()
		c := jobClient(t, srv, clock)
		srv.AddJob(githubtest.Job{ID: 6011, Repo: testRepo})
		srv.Inject(githubtest.RouteWorkflowJob, githubtest.TooManyRequests(20*time.Second).Times(1))
		_, err := c.GetJob(ctx, jobRef(6011))
		var rl *github.RateLimitError
		if !errors.As(err, &rl) || !rl.Secondary || !rl.RetryAt.Equal(clock.Now().Add(20*time.Second)) {
			t.Fatalf("429: %v, want a secondary RateLimitError 20s from now", err)
		}
		answered := srv.CallCount(githubtest.RouteWorkflowJob)
		if _, err := c.GetJob(ctx, jobRef(6011)); !errors.As(err, &rl) {
			t.Fatalf("during the wait: %v, want a RateLimitError", err)
		}
		if srv.CallCount(githubtest.RouteWorkflowJob) != answered {
			t.Fatal("a call during the wait reached GitHub")
		}
		clock.Advance(20 * time.Second)
		if _, err := c.GetJob(ctx, jobRef(6011)); err != nil {
			t.Fatalf("after the wait: %v", err)
		}
	})
	t.Run("403 primary rate limit", func(t *testing.T) {
		srv := fakeGitHub(t)
		c := jobClient(t, srv, newClock())
		srv.AddJob(githubtest.Job{ID: 6012, Repo: testRepo})
		reset := time.Now().Add(time.Hour).Truncate(time.Second)
		srv.Inject(githubtest.RouteWorkflowJob, githubtest.PrimaryRateLimit(reset).Times(1))
		_, err := c.GetJob(ctx, jobRef(6012))
		var rl *github.RateLimitError
		if !errors.As(err, &rl) || rl.Secondary || !rl.RetryAt.Equal(reset) {
			t.Fatalf("403 primary: %v, want a primary RateLimitError until %s", err, reset)
		}
		// Every operation of the installation waits, not just this one.
		if _, err := c.ListRunners(ctx, jobOwner); !errors.As(err, &rl) {
			t.Fatalf("another call during the limit: %v", err)
		}
		if n := srv.CallCount(githubtest.RouteWorkflowJob) + srv.CallCount(githubtest.RouteOrgRunners); n != 1 {
			t.Fatalf("%d calls reached GitHub, want only the limited one", n)
		}
	})
	t.Run("403 permission", func(t *testing.T) {
		srv := fakeGitHub(t)
		c := jobClient(t, srv, newClock())
		srv.AddJob(githubtest.Job{ID: 6013, Repo: testRepo})
		srv.Inject(githubtest.RouteWorkflowJob, githubtest.Forbidden().Times(1))
		_, err := c.GetJob(ctx, jobRef(6013))
		var pe *github.PermissionError
		if !errors.As(err, &pe) || !errors.Is(err, github.ErrMisconfigured) || !strings.Contains(pe.Message, `"Actions: Read-only"`) {
			t.Fatalf("403: %v, want a *github.PermissionError naming the Actions permission", err)
		}
	})
}

func TestGetJobRefusesBadRefsWithoutCalling(t *testing.T) {
	srv := fakeGitHub(t)
	c := jobClient(t, srv, newClock())
	for _, ref := range []github.JobRef{
		{Repository: testRepo, ID: 1},
		{Owner: jobOwner, Repository: "octo-org", ID: 1},
		{Owner: jobOwner, Repository: "octo-org/a/b", ID: 1},
		{Owner: jobOwner, Repository: "octo-org/..", ID: 1},
		{Owner: jobOwner, Repository: "octo-org/x?y", ID: 1},
		{Owner: jobOwner, Repository: "/hello-world", ID: 1},
		{Owner: jobOwner, Repository: testRepo},
	} {
		if _, err := c.GetJob(context.Background(), ref); err == nil || errors.Is(err, github.ErrJobNotFound) {
			t.Errorf("%+v: %v, want a refusal", ref, err)
		}
	}
	if n := srv.CallCount("*"); n != 0 {
		t.Errorf("%d calls reached GitHub", n)
	}
}
