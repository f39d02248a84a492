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

// TestHookBindsThePullRequestsRef: a pull request's ref cannot write the
// default branch's scope, even from a job that becomes root on its machine.
// The hook's registration trades at once, so runfleet binds the machine to
// the pull request's ref before any step ran; a restarted agent, told
// refs/heads/main with the same agent token, gets no token, and GitHub's
// client saves nothing (a warning; the step passes).
func TestHookBindsThePullRequestsRef(t *testing.T) {
	w := newAgentWorld(t, nil, "", true)
	defer func() {
		if t.Failed() {
			t.Logf("logs:\n%s", w.logs.Tail(40))
		}
	}()
	w.ledger["m-1"] = cache.MachineJob{Live: true, Repository: "org/app", Active: true}
	ws := t.TempDir()
	runHook(t, w.serveSocket(t), map[string]string{
		"GITHUB_REPOSITORY": "org/app", "GITHUB_REF": "refs/pull/7/merge",
		"GITHUB_EVENT_NAME": "pull_request", "GITHUB_BASE_REF": "main",
		"GITHUB_EVENT_PATH": eventFile(t, `{"repository":{"default_branch":"main"},"pull_request":{"base":{"ref":"main"}}}`),
	})
	// Bound by the hook itself, before any cache call.
	if got := w.logs.Lines(t, map[string]any{"msg": "cache: job token minted", "write": "refs/pull/7/merge"}); len(got) != 1 {
		t.Fatalf("the hook's registration minted %d tokens for the pull request's ref, want 1", len(got))
	}
	cachetest.WriteData(t, ws, 1<<20)
	if r := w.run(ws, "save", "data", "pr-own"); !saved(r) {
		t.Fatalf("the pull request's save to its own ref: %s", r.Stdout)
	}

	w.restartAgent()
	out := runHook(t, w.serveSocket(t), map[string]string{
		"GITHUB_REPOSITORY": "org/app", "GITHUB_REF": "refs/heads/main", "GITHUB_EVENT_NAME": "push",
		"GITHUB_EVENT_PATH": eventFile(t, `{"repository":{"default_branch":"main"}}`),
	})
	if strings.Contains(out, "not told") {
		t.Fatalf("the restarted agent's registration failed locally: %s", out)
	}
	if r := w.run(ws, "save", "data", "poison"); saved(r) || !strings.Contains(r.Stdout, "::warning::") {
		t.Fatalf("a pull request's machine saved to the default branch's scope: %s", r.Stdout)
	}
	if got := w.logs.Lines(t, map[string]any{"msg": "cache: job token refused", "bound_ref": "refs/pull/7/merge", "ref": "refs/heads/main"}); len(got) == 0 {
		t.Fatal("no refusal naming both refs was logged")
	}
	if got := w.logs.Lines(t, map[string]any{"msg": "cache: job token minted", "write": "refs/heads/main"}); len(got) != 0 {
		t.Fatalf("a token writing refs/heads/main was minted: %v", got)
	}
}

// TestHookRegistersWhenRunfleetIsDown: the registration answers at once
// when runfleet cannot be reached; the job goes on (the first cache call
// asks again).
func TestHookRegistersWhenRunfleetIsDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	_ = l.Close()
	w := newAgentWorld(t, nil, down, true)
	out := runHook(t, w.serveSocket(t), map[string]string{
		"GITHUB_REPOSITORY": "org/app", "GITHUB_REF": "refs/heads/main", "GITHUB_EVENT_NAME": "push",
		"GITHUB_EVENT_PATH": eventFile(t, `{"repository":{"default_branch":"main"}}`),
	})
	if strings.Contains(out, "not told") {
		t.Fatalf("the registration failed: %s", out)
	}
	if got := w.logs.WithMessage(t, "no job token at registration"); len(got) != 1 {
		t.Fatalf("%d warnings of the failed trade, want 1", len(got))
	}
}
