package rest_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/webhook"
)

// queuedPayload is a workflow_job "queued" delivery in GitHub's shape
// (trimmed): runner fields null while queued, the installation that sent it.
const queuedPayload = `{
  "action": "queued",
  "workflow_job": {
    "id": %d, "run_id": 5000, "run_attempt": 2, "status": "queued", "conclusion": null,
    "labels": ["self-hosted", "linux", "x64"],
    "runner_id": null, "runner_name": null, "runner_group_id": null, "runner_group_name": null,
    "created_at": "2025-06-01T12:00:00Z", "started_at": "2025-06-01T12:00:00Z", "completed_at": null,
    "html_url": "https://github.com/octo-org/hello-world/actions/runs/5000/job/%d"
  },
  "repository": {"full_name": "octo-org/hello-world", "name": "hello-world", "owner": {"login": "octo-org"}},
  "organization": {"login": "octo-org"},
  "installation": {"id": 888}
}`

// The webhook intake takes GitHub's content type with its charset and hands
// the engine the payload's installation id and run attempt: the runner is
// registered with that installation's token, not the configured default.
func TestWebhookIntakeUsesThePayloadsInstallation(t *testing.T) {
	w := newWorld(t, worldOptions{fakeOptions: []githubtest.Option{githubtest.WithInstallation(888, testOrg)}})
	secret := []byte("It's a Secret to Everybody")
	intake, err := webhook.New(webhook.Options{Secret: secret, Handler: w.Engine, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	const jobID = 701
	body := fmt.Appendf(nil, queuedPayload, jobID, jobID)
	headers := http.Header{}
	headers.Set("Content-Type", "application/json; charset=utf-8")
	headers.Set(webhook.EventHeader, webhook.EventWorkflowJob)
	headers.Set(webhook.DeliveryHeader, "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	headers.Set("X-Hub-Signature-256", webhook.Sign(secret, body))
	headers.Set("User-Agent", "GitHub-Hookshot/044aadd")
	resp := intake.Handle(context.Background(), webhook.Request{Headers: headers, Body: body})
	if resp.StatusCode/100 != 2 {
		t.Fatalf("intake answered %d: %s", resp.StatusCode, resp.Body)
	}
	name := runner.InstanceName(enginetest.Pool, jobID, 2)
	inst := w.WaitStatus(name, runner.StatusRunning)
	if inst.InstallationID != 888 || inst.RunAttempt != 2 {
		t.Errorf("instance installation %d, run attempt %d", inst.InstallationID, inst.RunAttempt)
	}
	jits := w.callsAt(githubtest.RouteOrgJITConfig)
	if len(jits) != 1 || jits[0].Identity != "installation:888" {
		t.Fatalf("JIT calls %+v, want one as installation 888", jits)
	}
}
