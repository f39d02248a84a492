package cacheagent

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/cache/cachetest"

	"github.com/runfleet/runfleet/internal/cache"
)

// TestRealClientThroughAgent: GitHub's client, unchanged, given GitHub's
// results URL (the agent's name) and GitHub's token, saves to and restores
// from runfleet's cache through the agent, with the cache token of the
// machine's job — the hand-off of issue #34.
func TestRealClientThroughAgent(t *testing.T) {
	w := newAgentWorld(t, nil, "", false)
	defer func() {
		if t.Failed() {
			t.Logf("logs:\n%s", w.logs.Tail(40))
		}
	}()
	ws := t.TempDir()
	const mb = 1 << 20
	mainA := w.job(cache.Job{RepoID: 1, Repo: "o/a", Ref: "refs/heads/main", DefaultBranch: "main"})
	targetA := w.job(cache.Job{RepoID: 1, Repo: "o/a", Ref: "refs/heads/main", PullRequest: true, BaseRef: "main", DefaultBranch: "main"})
	prA := w.job(cache.Job{RepoID: 1, Repo: "o/a", Ref: "refs/pull/7/merge", PullRequest: true, BaseRef: "main", DefaultBranch: "main"})
	mainB := w.job(cache.Job{RepoID: 2, Repo: "o/b", Ref: "refs/heads/main", DefaultBranch: "main"})

	w.box.set(mainA)
	sum := cachetest.WriteData(t, ws, mb)
	if r := w.run(ws, "save", "data", "deps-linux-1"); !saved(r) {
		t.Fatalf("save through the agent: %s", r.Stdout)
	}

	t.Run("restore gets the same bytes", func(t *testing.T) {
		cachetest.ClearData(t, ws)
		r := w.run(ws, "restore", "data", "deps-linux-2", "deps-linux-")
		got, ok := cachetest.ReadData(t, ws)
		if matched(r) != "deps-linux-1" || !ok || got != sum {
			t.Fatalf("restore matched %q, same bytes %v:\n%s", matched(r), got == sum, r.Stdout)
		}
	})
	t.Run("a second save of a key is refused as GitHub refuses it", func(t *testing.T) {
		cachetest.WriteData(t, ws, mb)
		if r := w.run(ws, "save", "data", "deps-linux-1"); !refusedSave(r, "another job may be creating this cache") {
			t.Fatalf("second save: %s", r.Stdout)
		}
	})
	t.Run("restore keys fall back to the newest prefix match", func(t *testing.T) {
		w.clock.Advance(time.Minute)
		newer := cachetest.WriteData(t, ws, mb)
		if r := w.run(ws, "save", "data", "deps-linux-9"); !saved(r) {
			t.Fatalf("save: %s", r.Stdout)
		}
		cachetest.ClearData(t, ws)
		r := w.run(ws, "restore", "data", "deps-linux-missing", "deps-linux-")
		if got, _ := cachetest.ReadData(t, ws); matched(r) != "deps-linux-9" || got != newer {
			t.Fatalf("restore matched %q:\n%s", matched(r), r.Stdout)
		}
	})
	t.Run("repository B's job reads nothing of A", func(t *testing.T) {
		w.box.set(mainB)
		cachetest.ClearData(t, ws)
		if r := w.run(ws, "restore", "data", "deps-linux-1", "deps-"); matched(r) != "" {
			t.Fatalf("B restored A's %q", matched(r))
		}
	})
	t.Run("a pull request's job cannot write the default branch's scope", func(t *testing.T) {
		w.box.set(targetA)
		cachetest.WriteData(t, ws, mb)
		if r := w.run(ws, "save", "data", "poison"); !refusedSave(r, "Failed to save") {
			t.Fatalf("pull_request_target save: %s", r.Stdout)
		}
		w.box.set(prA)
		if r := w.run(ws, "save", "data", "pr-own"); !saved(r) {
			t.Fatalf("a PR's save to its own ref: %s", r.Stdout)
		}
		w.box.set(mainA)
		cachetest.ClearData(t, ws)
		for _, key := range []string{"poison", "pr-own"} {
			if r := w.run(ws, "restore", "data", key); matched(r) != "" {
				t.Fatalf("the default branch reads %q, which a pull request wrote", key)
			}
		}
	})
	t.Run("no job token yet: a warning and a miss", func(t *testing.T) {
		w.box.set("")
		cachetest.ClearData(t, ws)
		r := w.run(ws, "restore", "data", "deps-linux-1")
		if matched(r) != "" || !strings.Contains(r.Stdout, "::warning::") {
			t.Fatalf("restore without a token: %s", r.Stdout)
		}
	})
	c := w.agent.Counts()
	if c.CacheCalls == 0 || c.PassThrough != 0 {
		t.Fatalf("agent counts %+v: the cache calls must be the agent's own", c)
	}
	if m := w.metrics.Snapshot(); m.Hits == 0 || m.BytesUploaded < mb {
		t.Fatalf("runfleet's cache saw %+v", m)
	}
}

// TestOutageThroughAgent: runfleet's cache is down (nothing listens); the
// client's own fallback holds at once — a warning and a miss, a warning and
// no save — and the step passes.
func TestOutageThroughAgent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String()
	_ = l.Close()
	w := newAgentWorld(t, nil, down, false)
	w.box.set(w.job(cache.Job{RepoID: 1, Repo: "o/a", Ref: "refs/heads/main", DefaultBranch: "main"}))
	ws := t.TempDir()
	cachetest.WriteData(t, ws, 1<<20)
	r := w.run(ws, "save", "data", "k")
	if r.ID == nil || *r.ID != -1 || !strings.Contains(r.Stdout, "::warning::") || !strings.Contains(r.Stdout, "unavailable") {
		t.Fatalf("save during an outage: %s", r.Stdout)
	}
	cachetest.ClearData(t, ws)
	r = w.run(ws, "restore", "data", "k")
	if matched(r) != "" || !strings.Contains(r.Stdout, "::warning::") {
		t.Fatalf("restore during an outage: %s", r.Stdout)
	}
	if strings.Contains(r.Stdout, "Retrying") {
		t.Fatalf("the client retried; the agent must answer an outage at once:\n%s", r.Stdout)
	}
	if c := w.agent.Counts(); c.Outages < 2 {
		t.Fatalf("outages counted: %+v", c)
	}
}
