package githubtest_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	gh "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github/githubtest"
)

// SetJob plays what the engine must find out by asking: a job's state
// whatever deliveries it missed, including a runner that has since removed
// itself.
func TestSetJobIsWhatGetJobAnswers(t *testing.T) {
	srv, client := appServer(t)
	ctx := context.Background()
	srv.AddJob(githubtest.Job{ID: 4100, Repo: testRepo})
	get := func() *gh.WorkflowJob {
		t.Helper()
		job, _, err := client.Actions.GetWorkflowJobByID(ctx, "octo-org", "hello-world", 4100)
		if err != nil {
			t.Fatal(err)
		}
		return job
	}

	if !srv.SetJob(4100, githubtest.JobInProgress, "", "runfleet-gone-1") {
		t.Fatal("SetJob on a known job")
	}
	running := get()
	if running.GetStatus() != "in_progress" || running.GetRunnerName() != "runfleet-gone-1" || running.GetRunnerID() == 0 ||
		running.Conclusion != nil || running.CompletedAt != nil {
		t.Fatalf("in_progress job on an unregistered runner = %+v", running)
	}

	srv.SetJob(4100, githubtest.JobCompleted, "cancelled", "runfleet-gone-1")
	done := get()
	if done.GetStatus() != "completed" || done.GetConclusion() != "cancelled" || done.CompletedAt == nil ||
		done.GetRunnerID() != running.GetRunnerID() {
		t.Fatalf("completed job = %+v (the runner id must stay %d)", done, running.GetRunnerID())
	}

	// A registered runner's own id and group end up on the job.
	group := srv.AddRunnerGroup(testOrg, "gpu")
	static := srv.AddRunner(githubtest.Runner{Owner: testOrg, Name: "static-2", GroupID: group})
	srv.SetJob(4100, githubtest.JobInProgress, "", "static-2")
	if job := get(); job.GetRunnerID() != static.ID || job.GetRunnerGroupID() != group || job.GetRunnerGroupName() != "gpu" {
		t.Fatalf("job on a registered runner = %+v", job)
	}
	if r, _ := srv.RunnerByName("static-2"); r.Busy {
		t.Error("SetJob must leave the runner's side alone")
	}

	srv.SetJob(4100, githubtest.JobQueued, "", "")
	if job := get(); job.GetStatus() != "queued" || job.RunnerName != nil || job.RunnerID != nil || job.CompletedAt != nil {
		t.Fatalf("queued again = %+v", job)
	}
	if srv.SetJob(4101, githubtest.JobQueued, "", "") {
		t.Fatal("SetJob on a job never added reported success")
	}
	if _, resp, err := client.Actions.GetWorkflowJobByID(ctx, "octo-org", "hello-world", 4101); err == nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown job: %v, want 404", err)
	}
}

// Injected faults answer GET job as they answer the runner routes.
func TestFaultsApplyToGetJob(t *testing.T) {
	srv, client := appServer(t)
	ctx := context.Background()
	srv.AddJob(githubtest.Job{ID: 4200, Repo: testRepo})
	get := func() (*gh.Response, error) {
		_, resp, err := client.Actions.GetWorkflowJobByID(ctx, "octo-org", "hello-world", 4200)
		return resp, err
	}

	srv.Inject(githubtest.RouteWorkflowJob, githubtest.ServerError(http.StatusBadGateway).Times(1))
	if resp, err := get(); err == nil || resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("5xx fault: %v", err)
	}

	srv.Inject("GET /repos/octo-org/hello-world/actions/jobs/4200", githubtest.TooManyRequests(7*time.Second).Times(1))
	if resp, err := get(); err == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("429 fault: %v", err)
	}

	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	srv.Inject(githubtest.RouteWorkflowJob, githubtest.PrimaryRateLimit(reset).Times(1))
	_, err := get()
	var rl *gh.RateLimitError
	if !errors.As(err, &rl) || !rl.Rate.Reset.Time.Equal(reset) {
		t.Fatalf("primary rate limit fault: %T %v", err, err)
	}

	if n := srv.CallCount(githubtest.RouteWorkflowJob); n != 3 {
		t.Errorf("%d calls to the job route, want 3", n)
	}
}
