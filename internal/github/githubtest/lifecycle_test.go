package githubtest_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	gh "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github/githubtest"
)

func TestRunnerGroupsByName(t *testing.T) {
	srv, client := appServer(t)
	ctx := context.Background()
	gpu := srv.AddRunnerGroup(testOrg, "gpu")
	big := srv.AddRunnerGroup("enterprise:"+testEnterprise, "big")

	groups, _, err := client.Actions.ListOrganizationRunnerGroups(ctx, testOrg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if groups.TotalCount != 2 || groups.RunnerGroups[0].GetName() != githubtest.DefaultRunnerGroupName || !groups.RunnerGroups[0].GetDefault() ||
		groups.RunnerGroups[1].GetID() != gpu || groups.RunnerGroups[1].GetName() != "gpu" {
		t.Fatalf("org groups = %+v", groups.RunnerGroups)
	}
	ent, _, err := client.Enterprise.ListRunnerGroups(ctx, testEnterprise, nil)
	if err != nil || ent.GetTotalCount() != 2 || ent.RunnerGroups[1].GetID() != big {
		t.Fatalf("enterprise groups = %v %+v", err, ent)
	}

	req := jitRequest("in-gpu")
	req.RunnerGroupID = gpu
	if _, _, err := client.Actions.GenerateOrgJITConfig(ctx, testOrg, req); err != nil {
		t.Fatal(err)
	}
	if r, _ := srv.RunnerByName("in-gpu"); r.GroupID != gpu {
		t.Errorf("runner group = %d, want %d", r.GroupID, gpu)
	}
	req = jitRequest("nowhere")
	req.RunnerGroupID = 999
	if _, resp, err := client.Actions.GenerateOrgJITConfig(ctx, testOrg, req); err == nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown group: %v", err)
	}
}

func TestJobLifecycle(t *testing.T) {
	srv, client := appServer(t)
	ctx := context.Background()
	srv.AddJob(githubtest.Job{ID: 5150, RunAttempt: 2, Repo: testRepo, Labels: []string{"self-hosted", "linux"}})

	job, _, err := client.Actions.GetWorkflowJobByID(ctx, "octo-org", "hello-world", 5150)
	if err != nil {
		t.Fatal(err)
	}
	if job.GetStatus() != "queued" || job.GetRunAttempt() != 2 || job.RunnerName != nil || job.RunnerID != nil ||
		!slices.Equal(job.Labels, []string{"self-hosted", "linux"}) {
		t.Fatalf("queued job = %+v", job)
	}

	jit, _, err := client.Actions.GenerateRepoJITConfig(ctx, "octo-org", "hello-world", jitRequest("runfleet-1"))
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := srv.ConnectRunner(jit.GetEncodedJITConfig()); !ok || r.Status != githubtest.StatusOnline {
		t.Fatalf("ConnectRunner = %+v %v", r, ok)
	}
	if !srv.StartJob(5150, "runfleet-1") {
		t.Fatal("StartJob")
	}
	job, _, _ = client.Actions.GetWorkflowJobByID(ctx, "octo-org", "hello-world", 5150)
	if job.GetStatus() != "in_progress" || job.GetRunnerName() != "runfleet-1" || job.GetRunnerID() != jit.Runner.GetID() ||
		job.GetRunnerGroupName() != githubtest.DefaultRunnerGroupName {
		t.Fatalf("running job = %+v", job)
	}
	runner, _, err := client.Actions.GetRunner(ctx, "octo-org", "hello-world", jit.Runner.GetID())
	if err != nil || !runner.GetBusy() || runner.GetStatus() != "online" {
		t.Fatalf("runner while the job runs = %+v %v", runner, err)
	}

	if !srv.FinishRunner("runfleet-1") {
		t.Fatal("FinishRunner")
	}
	job, _, _ = client.Actions.GetWorkflowJobByID(ctx, "octo-org", "hello-world", 5150)
	if job.GetStatus() != "completed" || job.GetConclusion() != "success" || job.CompletedAt == nil {
		t.Fatalf("finished job = %+v", job)
	}
	if _, resp, _ := client.Actions.GetRunner(ctx, "octo-org", "hello-world", jit.Runner.GetID()); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a JIT runner is gone after its job: %d", resp.StatusCode)
	}
	if _, ok := srv.ConnectRunner(jit.GetEncodedJITConfig()); ok {
		t.Fatal("a used JIT config must not connect again")
	}
	if _, resp, _ := client.Actions.GetWorkflowJobByID(ctx, "octo-org", "other-repo", 5150); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("job under another repository: %d, want 404", resp.StatusCode)
	}
}

func TestStaticRunnerGoesIdleAfterItsJob(t *testing.T) {
	srv, client := appServer(t)
	srv.AddRunner(githubtest.Runner{Owner: testOrg, Name: "static", Labels: []string{"self-hosted"}, Status: githubtest.StatusOnline})
	srv.AddJob(githubtest.Job{ID: 1, Repo: testRepo})
	srv.StartJob(1, "static")
	srv.FinishJob(1, "failure")
	r, ok := srv.RunnerByName("static")
	if !ok || r.Busy || r.JobID != 0 {
		t.Fatalf("static runner after its job = %+v %v", r, ok)
	}
	list, _, err := client.Actions.ListOrganizationRunners(context.Background(), testOrg, nil)
	if err != nil || list.TotalCount != 1 || list.Runners[0].GetOS() != "linux" || list.Runners[0].Labels[0].GetType() != "read-only" {
		t.Fatalf("list = %+v %v", list, err)
	}
}

func TestAppAuthUnderGHESBase(t *testing.T) {
	key := githubtest.GenerateAppKey(t)
	srv := githubtest.NewServer(t, githubtest.WithApp(testAppID, key.PublicKey), githubtest.WithInstallation(testInstallationID, testOrg))
	srv.AddOrg(testOrg)
	client := installationClient(t, srv, srv.GHESURL(), key.PrivateKeyPEM, testInstallationID)
	if _, _, err := client.Actions.ListOrganizationRunners(context.Background(), testOrg, &gh.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range srv.Calls() {
		if c.Status >= 300 {
			t.Errorf("call %+v failed", c)
		}
	}
	if srv.CallCount(githubtest.RouteAccessTokens) != 1 {
		t.Error("the token was not fetched under /api/v3")
	}
}
