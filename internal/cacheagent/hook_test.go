package cacheagent

import (
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/cache/cachetest"

	"github.com/runfleet/runfleet/internal/cache"
)

// hookWorld adds the agent's local socket and runs the real hook script.
func (w *agentWorld) serveSocket(t *testing.T) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: RegisterHandler(w.jobs, w.logs.Logger(slog.LevelInfo))}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return sock
}

func runHook(t *testing.T, sock string, env map[string]string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "job-started.sh")
	if err := os.WriteFile(script, []byte(HookScript(sock)), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", script)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the hook failed (it must never fail the job): %v\n%s", err, out)
	}
	return string(out)
}

func eventFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHookTokenClient is the whole hand-off on one machine: the runner's
// job-started hook tells the agent the job's repository and ref; the agent
// trades its agent token for the job's cache token at runfleet, which
// checks the repository against its ledger; GitHub's client then saves and
// restores through the agent.
func TestHookTokenClient(t *testing.T) {
	w := newAgentWorld(t, nil, "", true)
	defer func() {
		if t.Failed() {
			t.Logf("logs:\n%s", w.logs.Tail(40))
		}
	}()
	w.ledger["m-1"] = cache.MachineJob{Live: true, Repository: "org/app", Active: true}
	sock := w.serveSocket(t)
	ws := t.TempDir()

	// A pull_request_target job: runs on main's ref, must not write it.
	out := runHook(t, sock, map[string]string{
		"GITHUB_REPOSITORY": "org/app", "GITHUB_REF": "refs/heads/main",
		"GITHUB_EVENT_NAME": "pull_request_target", "GITHUB_BASE_REF": "main",
		"GITHUB_EVENT_PATH": eventFile(t, `{"repository":{"default_branch":"main"},"pull_request":{"base":{"ref":"main"}}}`),
	})
	if strings.Contains(out, "not told") {
		t.Fatalf("hook: %s", out)
	}
	cachetest.WriteData(t, ws, 1<<20)
	if r := w.run(ws, "save", "data", "poison"); !refusedSave(r, "Failed to save") {
		t.Fatalf("a pull_request_target job saved to main's scope: %s", r.Stdout)
	}
	t.Run("the job cannot register again", func(t *testing.T) {
		out := runHook(t, sock, map[string]string{"GITHUB_REPOSITORY": "org/app", "GITHUB_REF": "refs/heads/main", "GITHUB_EVENT_NAME": "push"})
		if !strings.Contains(out, "not told") {
			t.Fatalf("a second registration was taken: %s", out)
		}
	})
}

// TestHookPushJob: a push job on main saves and restores through the
// agent; a machine whose hook names another repository than the ledger's
// gets no token and the job goes on without the cache.
func TestHookPushJob(t *testing.T) {
	w := newAgentWorld(t, nil, "", true)
	w.ledger["m-1"] = cache.MachineJob{Live: true, Repository: "org/app", Active: true}
	sock := w.serveSocket(t)
	ws := t.TempDir()
	runHook(t, sock, map[string]string{
		"GITHUB_REPOSITORY": "org/app", "GITHUB_REF": "refs/heads/main", "GITHUB_EVENT_NAME": "push",
		"GITHUB_EVENT_PATH": eventFile(t, `{"repository":{"default_branch":"main"}}`),
	})
	sum := cachetest.WriteData(t, ws, 1<<20)
	if r := w.run(ws, "save", "data", "deps"); !saved(r) {
		t.Fatalf("save: %s\n%s", r.Stdout, w.logs.Tail(20))
	}
	cachetest.ClearData(t, ws)
	if r := w.run(ws, "restore", "data", "deps"); matched(r) != "deps" {
		t.Fatalf("restore: %s", r.Stdout)
	}
	if got, _ := cachetest.ReadData(t, ws); got != sum {
		t.Fatal("restored other bytes")
	}

	t.Run("another repository than the ledger's: no token, the job goes on", func(t *testing.T) {
		w2 := newAgentWorld(t, nil, "", true)
		w2.ledger["m-1"] = cache.MachineJob{Live: true, Repository: "org/app", Active: true}
		sock := w2.serveSocket(t)
		runHook(t, sock, map[string]string{
			"GITHUB_REPOSITORY": "org/other", "GITHUB_REF": "refs/heads/main", "GITHUB_EVENT_NAME": "push",
			"GITHUB_EVENT_PATH": eventFile(t, `{"repository":{"default_branch":"main"}}`),
		})
		r := w2.run(ws, "restore", "data", "deps")
		if matched(r) != "" || !strings.Contains(r.Stdout, "::warning::") {
			t.Fatalf("restore: %s", r.Stdout)
		}
	})
}
