package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/webhook"
)

// sideBySideSecret is what parseConfig reads for every secret_env.
const sideBySideSecret = "secret"

// sideBySideConfig has two pools on one installation: "hooks", fed by
// workflow_job webhooks, and "p", fed by the scale set linux-scale.
func sideBySideConfig(dir, github string) string {
	return scaleSetConfig(dir, github) + `  - name: hooks
    owner: octo-org
    labels: [self-hosted, linux, x64]
    max_runners: 1
    provider: {type: simulated}
`
}

// A webhook-fed pool and a scale-set-fed pool run side by side in one
// serve: the webhook job gets its runner through the REST API's JIT
// endpoint, the scale-set job through its scale set, one runner each, and
// neither pool serves the other's job.
func TestWebhookAndScaleSetPoolsRunSideBySide(t *testing.T) {
	api, rest, actions := oneGitHub(t)
	base, logs, _ := serveOnGitHub(t, sideBySideConfig(t.TempDir(), "{token_env: TOKEN, base_url: '"+api+"'}"))
	explain := func() string { return logs.Tail(30) }

	// The webhook job.
	const webhookJob = 7000000001
	deliverQueued(t, base, webhookJob)
	hooksRunner := runner.InstanceName("hooks", webhookJob, 1)
	enginetest.Eventually(t, "the webhook job's runner registered through the REST API", func() bool {
		_, ok := rest.RunnerByName(hooksRunner)
		return ok
	}, explain)

	// The scale-set job.
	enginetest.Eventually(t, "the listener's session", func() bool {
		return len(logs.WithMessage(t, "message session created")) > 0
	}, explain)
	client := actions.Client(t)
	set, err := client.EnsureScaleSet(context.Background(), "", scaleset.ScaleSetSpec{Name: "linux-scale"})
	if err != nil {
		t.Fatal(err)
	}
	id := actions.QueueJob(set.ID, scalesettest.JobSpec{Repository: "octo-org/app", Labels: []string{"linux-scale"}})
	scaleRunner := runner.InstanceName("p", runner.ScaleSetJobID(id), 1)
	enginetest.Eventually(t, "the scale-set job's runner registered in the scale set", func() bool {
		_, err := client.RunnerByName(context.Background(), scaleRunner)
		return err == nil
	}, explain)

	// One runner each, each through its own intake.
	if _, ok := rest.RunnerByName(scaleRunner); ok {
		t.Errorf("the scale-set job's runner %s was registered through the REST JIT endpoint", scaleRunner)
	}
	if _, err := client.RunnerByName(context.Background(), hooksRunner); err == nil {
		t.Errorf("the webhook job's runner %s was registered in the scale set", hooksRunner)
	}
	var ours []string
	for _, r := range rest.Runners() {
		if strings.HasPrefix(r.Name, "runfleet-") {
			ours = append(ours, r.Name)
		}
	}
	if len(ours) != 1 || ours[0] != hooksRunner {
		t.Errorf("REST runners = %v, want only %s", ours, hooksRunner)
	}
	for _, other := range []string{runner.InstanceName("p", webhookJob, 1), runner.InstanceName("hooks", runner.ScaleSetJobID(id), 1)} {
		if _, ok := rest.RunnerByName(other); ok {
			t.Errorf("a pool served the other intake's job: runner %s", other)
		}
	}
}

// deliverQueued posts the example queued workflow_job delivery for job id,
// signed, and requires a 2xx.
func deliverQueued(t *testing.T, base string, id int64) {
	t.Helper()
	raw, err := os.ReadFile("../../examples/payloads/queued.json")
	if err != nil {
		t.Fatal(err)
	}
	var payload map[string]any
	if err := json.Unmarshal(raw, &payload); err != nil {
		t.Fatal(err)
	}
	payload["workflow_job"].(map[string]any)["id"] = id
	body, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, base+"/webhook", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "workflow_job")
	req.Header.Set("X-GitHub-Delivery", "side-by-side-1")
	req.Header.Set("X-Hub-Signature-256", webhook.Sign([]byte(sideBySideSecret), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("webhook delivery answered %d", resp.StatusCode)
	}
}
