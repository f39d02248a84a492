package githubtest_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/webhook"
)

func TestWorkflowJobWebhookFollowsTheJob(t *testing.T) {
	srv, client := appServer(t)
	srv.AddJob(githubtest.Job{ID: 77, RunAttempt: 3, Repo: testRepo, Labels: []string{"self-hosted", "linux"}})

	parse := func(action string) *webhook.WorkflowJobEvent {
		t.Helper()
		body, err := srv.WorkflowJobWebhook(77, action, testEnterprise, testInstallationID)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := webhook.ParseWorkflowJob(body)
		if err != nil {
			t.Fatalf("%s: %v", action, err)
		}
		return ev
	}
	queued := parse("queued")
	j := queued.WorkflowJob
	if queued.Action != "queued" || j.ID != 77 || j.RunAttempt != 3 || j.RunnerName != nil || j.RunnerID != nil ||
		!slices.Equal(j.Labels, []string{"self-hosted", "linux"}) || queued.Repository.FullName != testRepo ||
		queued.Organization == nil || queued.Organization.Login != testOrg || queued.Installation.ID != testInstallationID ||
		queued.Enterprise == nil || queued.Enterprise.Slug != testEnterprise {
		t.Fatalf("queued webhook = %+v / %+v", queued, j)
	}

	jit, _, err := client.Actions.GenerateOrgJITConfig(context.Background(), testOrg, jitRequest("runner-77"))
	if err != nil {
		t.Fatal(err)
	}
	srv.StartJob(77, "runner-77")
	running := parse("in_progress").WorkflowJob
	if running.Runner() != "runner-77" || running.RunnerID == nil || *running.RunnerID != jit.Runner.GetID() || running.Status != "in_progress" {
		t.Fatalf("in_progress webhook job = %+v", running)
	}
	srv.FinishRunner("runner-77")
	done := parse("completed").WorkflowJob
	if done.Status != "completed" || done.Conclusion == nil || *done.Conclusion != "success" || done.CompletedAt == nil {
		t.Fatalf("completed webhook job = %+v", done)
	}
	if _, err := srv.WorkflowJobWebhook(1, "queued", "", 0); err == nil {
		t.Fatal("a webhook for an unknown job must fail")
	}
}

func TestWebhookRequestIsSignedForTheIntake(t *testing.T) {
	secret := []byte("s3cret")
	body := []byte(`{"action":"queued"}`)
	req, err := githubtest.WebhookRequest("http://127.0.0.1/webhook", secret, "workflow_job", "d-1", body)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(req.Body)
	if req.Method != http.MethodPost || string(got) != string(body) || req.Header.Get(webhook.EventHeader) != "workflow_job" ||
		req.Header.Get(webhook.DeliveryHeader) != "d-1" {
		t.Fatalf("request = %s %v %s", req.Method, req.Header, got)
	}
	if err := webhook.VerifySignature(secret, body, req.Header.Get(webhook.SignatureHeader)); err != nil {
		t.Fatalf("the intake refuses the signature: %v", err)
	}
}
