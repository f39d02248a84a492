package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/webhook"
)

const (
	linuxInstance  = "runfleet-linux-x64-7000000001-1"
	brokenInstance = "runfleet-always-fails-7000000002-1"
)

// TestServeEndToEnd drives the README tour through the binary's assembly
// and its command line: a job's runner is created and removed by webhooks,
// and a runner on a failing cloud is force-deleted by an operator.
func TestServeEndToEnd(t *testing.T) {
	srv := startServe(t, t.TempDir(), false)
	env := srv.cliEnv()

	res := runCLI(t, env, "webhook", "send", payload(t, "queued.json"))
	if res.code != exitOK || !strings.Contains(res.stdout, "instance_created") || !strings.Contains(res.stdout, linuxInstance) {
		t.Fatalf("webhook send queued: %+v", res)
	}
	inst := srv.waitStatus(t, linuxInstance, runner.StatusRunning)
	if inst.GitHubRunnerID == 0 || inst.ProviderID == "" {
		t.Errorf("running instance lacks its runner or machine: %+v", inst)
	}

	res = runCLI(t, env, "instances", "list")
	if res.code != exitOK || !strings.Contains(res.stdout, linuxInstance) || !strings.Contains(res.stdout, "running") {
		t.Errorf("instances list: %+v", res)
	}

	res = runCLI(t, env, "webhook", "send", payload(t, "completed.json"))
	if res.code != exitOK || !strings.Contains(res.stdout, "delete_scheduled") {
		t.Fatalf("webhook send completed: %+v", res)
	}
	srv.waitStatus(t, linuxInstance, runner.StatusDeleted)

	// The always-fails pool's cloud refuses creates and deletes: its
	// instance is stuck retrying until an operator forces it out.
	res = runCLI(t, env, "webhook", "send", payload(t, "queued-broken.json"))
	if res.code != exitOK || !strings.Contains(res.stdout, brokenInstance) {
		t.Fatalf("webhook send queued-broken: %+v", res)
	}
	srv.waitFor(t, brokenInstance, "failing", func(i *runner.Instance) bool { return i.ProviderFault != "" })
	// While the job is queued, each of its instances that fails for good is
	// replaced (within max_runners). GitHub cancels it: no more are made.
	res = runCLI(t, env, "webhook", "send", cancelled(t, "queued-broken.json"))
	if res.code != exitOK || !strings.Contains(res.stdout, "completed") {
		t.Fatalf("webhook send of the cancelled job: %+v", res)
	}
	stuck, err := srv.client(t).ListInstances(context.Background(), "always-fails")
	if err != nil || !slices.ContainsFunc(stuck, func(i *runner.Instance) bool { return i.Name == brokenInstance }) {
		t.Fatalf("the always-fails pool's instances: %+v, %v; want %s among them", stuck, err, brokenInstance)
	}
	for _, inst := range stuck {
		res = runCLI(t, env, "instances", "delete", inst.Name, "--force")
		if res.code != exitOK || !strings.Contains(res.stdout, "delete accepted") {
			t.Fatalf("instances delete %s --force: %+v", inst.Name, res)
		}
	}
	for _, inst := range stuck {
		srv.waitStatus(t, inst.Name, runner.StatusDeleted)
	}

	res = runCLI(t, env, "instances", "list")
	if res.code != exitOK || strings.TrimSpace(res.stdout) != "no live instances" {
		t.Errorf("instances list at the end: %+v", res)
	}
	res = runCLI(t, env, "instances", "show", brokenInstance, "--json")
	var shown runner.Instance
	if res.code != exitOK || json.Unmarshal([]byte(res.stdout), &shown) != nil || shown.Status != runner.StatusDeleted || shown.ProviderFault == "" {
		t.Errorf("instances show --json of the force-deleted instance: %+v", res)
	}
}

// TestServeKeepsAcceptedWorkAcrossRestart: a webhook answered 2xx is in
// the store and the queue, so a server stopped before any worker ran
// finishes the job after it starts again.
func TestServeKeepsAcceptedWorkAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	first := startServe(t, dir, true)
	res := sendPayload(t, first.url+"/webhook", "queued.json", "")
	if res.StatusCode != http.StatusOK || res.Reply == nil || res.Reply.Result != "instance_created" {
		t.Fatalf("queued webhook: %d %s", res.StatusCode, res.Body)
	}
	if inst := first.waitStatus(t, linuxInstance, runner.StatusPendingCreate); inst.ProviderID != "" {
		t.Fatalf("instance was worked on with workers disabled: %+v", inst)
	}
	first.stop()

	second := startServe(t, dir, false)
	second.waitStatus(t, linuxInstance, runner.StatusRunning)
}

// cancelled writes the example payload name as its job's completed
// delivery, the job cancelled, and returns the file's path.
func cancelled(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(payload(t, name))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	job := doc["workflow_job"].(map[string]any)
	doc["action"], job["status"], job["conclusion"] = "completed", "completed", "cancelled"
	if data, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cancelled-"+name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func sendPayload(t *testing.T, url, name, delivery string) *webhook.SendResult {
	t.Helper()
	body, err := os.ReadFile(payload(t, name))
	if err != nil {
		t.Fatal(err)
	}
	res, err := webhook.Send(context.Background(), url, []byte(testSecret), webhook.EventWorkflowJob, body, delivery)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestServeRejectsBadWebhooks: bad requests through the real server get
// their status and change nothing — no instance; the same delivery id,
// sent properly afterwards, is processed.
func TestServeRejectsBadWebhooks(t *testing.T) {
	srv := startServe(t, t.TempDir(), false)
	queued, err := os.ReadFile(payload(t, "queued.json"))
	if err != nil {
		t.Fatal(err)
	}
	const delivery = "11111111-2222-4333-8444-555555555555"
	oversized := append(bytes.TrimRight(queued, "\n}"), []byte(`, "padding": "`+strings.Repeat("x", testMaxBody)+`"}`)...)
	malformed := []byte(`{"action": "queued", "workflow_job": {`)

	cases := []struct {
		name      string
		body      []byte
		signature string
		want      int
	}{
		{"unsigned", queued, "", http.StatusUnauthorized},
		{"wrongly signed", queued, webhook.Sign([]byte("not-the-secret"), queued), http.StatusUnauthorized},
		{"oversized", oversized, webhook.Sign([]byte(testSecret), oversized), http.StatusRequestEntityTooLarge},
		{"malformed", malformed, webhook.Sign([]byte(testSecret), malformed), http.StatusBadRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, srv.url+"/webhook", bytes.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(webhook.EventHeader, webhook.EventWorkflowJob)
			req.Header.Set(webhook.DeliveryHeader, delivery)
			if c.signature != "" {
				req.Header.Set(webhook.SignatureHeader, c.signature)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var reply webhook.Reply
			if err := json.Unmarshal(body, &reply); err != nil {
				t.Fatalf("answer is not JSON: %s", body)
			}
			if resp.StatusCode != c.want || reply.Status != webhook.StatusRejected || reply.Message == "" {
				t.Errorf("got %d %+v, want %d rejected with a reason", resp.StatusCode, reply, c.want)
			}
		})
	}

	list, err := srv.client(t).ListInstances(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Fatalf("rejected webhooks made instances: %+v", list)
	}
	res := sendPayload(t, srv.url+"/webhook", "queued.json", delivery)
	if res.StatusCode != http.StatusOK || res.Reply == nil || res.Reply.Status != webhook.StatusProcessed {
		t.Fatalf("the proper delivery after the rejected ones: %d %s", res.StatusCode, res.Body)
	}
	srv.waitStatus(t, linuxInstance, runner.StatusRunning)
}

// TestServeHealthAndUnknownRoutes checks the health check and that
// unknown routes answer JSON, and that the operator API needs its token.
func TestServeHealthAndUnknownRoutes(t *testing.T) {
	srv := startServe(t, t.TempDir(), false)
	for path, want := range map[string]int{"/healthz": 200, "/nope": 404, "/api/v1/instances": 401} {
		resp, err := http.Get(srv.url + path)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]any
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != want || err != nil {
			t.Errorf("GET %s: %d (%v), want %d with JSON", path, resp.StatusCode, err, want)
		}
		if path == "/healthz" && body["status"] != "ok" {
			t.Errorf("healthz: %v", body)
		}
	}
	if !strings.Contains(srv.logs.String(), `"msg":"runfleet serving"`) || !strings.Contains(srv.logs.String(), "GitHub is SIMULATED") {
		t.Errorf("start lines missing:\n%s", srv.logs)
	}
	// Both simulated pieces are named at start, the machines with their pools.
	if lines := srv.logs.WithMessage(t, "machines are SIMULATED"); len(lines) != 1 || fmt.Sprint(lines[0]["simulated_pools"]) != "[linux-x64 always-fails]" {
		t.Errorf("the start log does not name the simulated pools once: %v", lines)
	}
}
