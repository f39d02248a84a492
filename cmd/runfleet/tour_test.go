package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
)

const busyInstance = "runfleet-busy-demo-7000000004-1"

// startTourServe runs serve with the README tour's own config,
// examples/local.yaml, and the development secrets `make run` exports;
// only its store moves to a temporary directory.
func startTourServe(t *testing.T) (*running, map[string]string) {
	t.Helper()
	t.Setenv("RUNFLEET_WEBHOOK_SECRET", "dev-webhook-secret")
	t.Setenv("RUNFLEET_API_TOKEN", "dev-api-token")
	cfg, err := config.Load("../../examples/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store.Dir = t.TempDir()
	srv := startServeConfig(t, cfg, false)
	return srv, map[string]string{
		"RUNFLEET_SERVER":         srv.url,
		"RUNFLEET_API_TOKEN":      "dev-api-token",
		"RUNFLEET_WEBHOOK_SECRET": "dev-webhook-secret",
	}
}

// TestTourBusyRunnerRefusesAnOrdinaryDelete is the tour's busy-runner
// step against examples/local.yaml: the busy-demo pool's runner is busy in
// the simulated GitHub, so an ordinary delete is refused, in one plain
// sentence, and --force deletes it.
func TestTourBusyRunnerRefusesAnOrdinaryDelete(t *testing.T) {
	srv, env := startTourServe(t)
	res := runCLI(t, env, "webhook", "send", payload(t, "queued-busy.json"))
	if res.code != exitOK || !strings.Contains(res.stdout, busyInstance) || !strings.HasSuffix(res.stdout, "\n") {
		t.Fatalf("webhook send queued-busy: %+v", res)
	}
	srv.waitStatus(t, busyInstance, runner.StatusRunning)

	res = runCLI(t, env, "instances", "delete", busyInstance)
	if res.code != exitFailure || !strings.Contains(res.stderr, "running a job") {
		t.Fatalf("ordinary delete of the busy runner: %+v; want it refused", res)
	}
	assertSaidOnce(t, res.stderr, "runfleet:", busyInstance, "409")
	if inst := srv.waitFor(t, busyInstance, "still running", func(*runner.Instance) bool { return true }); inst.Status != runner.StatusRunning {
		t.Errorf("the refused delete changed the instance: %s", inst.Status)
	}

	res = runCLI(t, env, "instances", "delete", busyInstance, "--force")
	if res.code != exitOK || !strings.Contains(res.stdout, "delete accepted") {
		t.Fatalf("forced delete: %+v", res)
	}
	srv.waitStatus(t, busyInstance, runner.StatusDeleted)
}

// TestTourListingsAndJSON follows the tour's first job through jobs list
// and instances list, in tables and in JSON.
func TestTourListingsAndJSON(t *testing.T) {
	srv, env := startTourServe(t)
	res := runCLI(t, env, "webhook", "send", payload(t, "queued.json"), "-o", "json")
	var reply map[string]any
	if res.code != exitOK || !strings.HasSuffix(res.stdout, "\n") || json.Unmarshal([]byte(res.stdout), &reply) != nil || reply["instance"] != linuxInstance {
		t.Fatalf("webhook send -o json: %+v", res)
	}
	srv.waitStatus(t, linuxInstance, runner.StatusRunning)

	res = runCLI(t, env, "jobs", "list")
	if res.code != exitOK || !strings.Contains(res.stdout, "7000000001#1") || !strings.Contains(res.stdout, "runner "+linuxInstance) ||
		!strings.Contains(res.stdout, "1 open job waiting for: 1 runner_") {
		t.Errorf("jobs list: %+v", res)
	}
	var jobs []runner.Job
	res = runCLI(t, env, "jobs", "list", "-o", "json")
	if res.code != exitOK || json.Unmarshal([]byte(res.stdout), &jobs) != nil || len(jobs) != 1 || jobs[0].ID != 7000000001 || jobs[0].Instance != linuxInstance {
		t.Errorf("jobs list -o json: %+v", res)
	}

	res = runCLI(t, env, "instances", "list", "--pool", "linux-x64")
	if res.code != exitOK || !strings.Contains(res.stdout, linuxInstance) || !strings.Contains(res.stdout, "1 instance in pool linux-x64: 1 running") {
		t.Errorf("instances list --pool: %+v", res)
	}
	var list []runner.Instance
	res = runCLI(t, env, "instances", "list", "--status", "running", "-o", "json")
	if res.code != exitOK || json.Unmarshal([]byte(res.stdout), &list) != nil || len(list) != 1 || list[0].Name != linuxInstance {
		t.Errorf("instances list --status running -o json: %+v", res)
	}
	res = runCLI(t, env, "instances", "list", "--status", "error")
	if res.code != exitOK || strings.TrimSpace(res.stdout) != "no live instances in status error" {
		t.Errorf("instances list --status error: %+v", res)
	}
	res = runCLI(t, env, "instances", "list", "--status", "deleted")
	if res.code != exitOK || strings.TrimSpace(res.stdout) != "no deleted instances (records are kept 7 days)" {
		t.Errorf("instances list --status deleted before any delete: %+v", res)
	}

	for _, step := range []string{"in_progress.json", "completed.json"} {
		if res := runCLI(t, env, "webhook", "send", payload(t, step)); res.code != exitOK {
			t.Fatalf("webhook send %s: %+v", step, res)
		}
	}
	srv.waitStatus(t, linuxInstance, runner.StatusDeleted)
	enginetest.Eventually(t, "the job to leave the open jobs", func() bool {
		res := runCLI(t, env, "jobs", "list")
		return res.code == exitOK && strings.TrimSpace(res.stdout) == "no open jobs"
	})
	var shown runner.Instance
	res = runCLI(t, env, "instances", "show", linuxInstance, "-o", "json")
	if res.code != exitOK || json.Unmarshal([]byte(res.stdout), &shown) != nil || shown.Status != runner.StatusDeleted {
		t.Errorf("instances show -o json of the deleted instance: %+v", res)
	}
	// The deleted instance leaves the default listing and stays in --all
	// and --status deleted while its record is kept.
	res = runCLI(t, env, "instances", "list")
	if res.code != exitOK || strings.Contains(res.stdout, linuxInstance) {
		t.Errorf("instances list after the delete: %+v; want the deleted %s left out", res, linuxInstance)
	}
	res = runCLI(t, env, "instances", "list", "--all")
	if res.code != exitOK || !strings.Contains(res.stdout, linuxInstance) || !strings.Contains(res.stdout, "; 1 deleted in the last 7 days") {
		t.Errorf("instances list --all after the delete: %+v; want %s and the deleted count", res, linuxInstance)
	}
	list = nil
	res = runCLI(t, env, "instances", "list", "--status", "deleted", "--pool", "linux-x64", "-o", "json")
	if res.code != exitOK || json.Unmarshal([]byte(res.stdout), &list) != nil || len(list) != 1 || list[0].Name != linuxInstance || list[0].Status != runner.StatusDeleted {
		t.Errorf("instances list --status deleted -o json: %+v", res)
	}
	res = runCLI(t, env, "reconcile", "-o", "json")
	if res.code != exitOK || !json.Valid([]byte(res.stdout)) {
		t.Errorf("reconcile -o json: %+v", res)
	}
}

// TestErrorsSayEachThingOnce: what the CLI prints for a failure names the
// program once, and each fact (the server, the instance) once.
func TestErrorsSayEachThingOnce(t *testing.T) {
	res := runCLI(t, map[string]string{"RUNFLEET_SERVER": "http://127.0.0.1:1"}, "instances", "list")
	if res.code != exitFailure || !strings.Contains(res.stderr, "cannot reach runfleet at http://127.0.0.1:1: ") {
		t.Errorf("unreachable server: %+v", res)
	}
	assertSaidOnce(t, res.stderr, "runfleet:", "127.0.0.1:1")

	res = runCLI(t, map[string]string{"RUNFLEET_WEBHOOK_SECRET": "s"}, "webhook", "send", payload(t, "queued.json"), "--url", "http://127.0.0.1:1/webhook")
	if res.code != exitFailure || !strings.Contains(res.stderr, "cannot deliver the webhook to http://127.0.0.1:1/webhook: ") {
		t.Errorf("unreachable webhook URL: %+v", res)
	}
	assertSaidOnce(t, res.stderr, "runfleet:", "127.0.0.1:1", "webhook:")

	srv := startServe(t, t.TempDir(), false)
	res = runCLI(t, srv.cliEnv(), "instances", "show", "runfleet-none-1-1")
	if res.code != exitFailure || strings.TrimSpace(res.stderr) != `runfleet: instance "runfleet-none-1-1" not found (server answered 404 Not Found)` {
		t.Errorf("show unknown: %+v", res)
	}
}

func assertSaidOnce(t *testing.T, text string, facts ...string) {
	t.Helper()
	for _, f := range facts {
		if n := strings.Count(text, f); n != 1 {
			t.Errorf("%q is said %d times, want once, in:\n%s", f, n, text)
		}
	}
}
