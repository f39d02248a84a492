package cache

import (
	"encoding/json"
	"log/slog"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/cache/cachetest"

	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/testlog"
)

// cacheWorld is runfleet's cache on local disk behind an HTTP server, and
// the tokens of a few jobs.
type cacheWorld struct {
	t       testing.TB
	client  string
	url     string
	clock   *testclock.Clock
	tokens  *Tokens
	metrics *Metrics
}

func newCacheWorld(t testing.TB, log *slog.Logger) *cacheWorld {
	t.Helper()
	client := cachetest.InstallClient(t)
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	t.Cleanup(srv.Close)
	metrics := &Metrics{}
	h, tokens, clock := testService(t, srv.URL, Options{Log: log, Metrics: metrics})
	srv.Config.Handler = h
	return &cacheWorld{t: t, client: client, url: srv.URL + "/", clock: clock, tokens: tokens, metrics: metrics}
}

func (w *cacheWorld) token(j Job) string {
	w.t.Helper()
	g, err := GrantFor(j)
	if err != nil {
		w.t.Fatal(err)
	}
	tok, err := w.tokens.Mint("runner-1", g, time.Hour)
	if err != nil {
		w.t.Fatal(err)
	}
	return tok
}

type clientResult struct {
	ID      *int64  `json:"id"`
	Matched *string `json:"matched"`
	Stdout  string  `json:"-"`
}

// run runs the client in workspace with the job's environment; the
// client must exit 0 whatever the cache did: a cache never fails a job.
func (w *cacheWorld) run(resultsURL, token, workspace string, args ...string) clientResult {
	w.t.Helper()
	cmd := exec.Command("node", append([]string{filepath.Join(mustAbs(w.t, "testdata"), "client.mjs")}, args...)...)
	cmd.Dir = workspace
	tmp := w.t.TempDir()
	cmd.Env = append(os.Environ(),
		"CACHE_CLIENT_DIR="+w.client,
		"ACTIONS_CACHE_SERVICE_V2=true",
		"ACTIONS_RESULTS_URL="+resultsURL,
		"ACTIONS_RUNTIME_TOKEN="+token,
		"ACTIONS_CACHE_URL=",
		"GITHUB_SERVER_URL=https://github.com",
		"GITHUB_WORKSPACE="+workspace,
		"RUNNER_TEMP="+tmp,
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("client %v failed (a cache must never fail the job): %v\n%s", args, err, out)
	}
	var res clientResult
	for _, line := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(line, "RESULT "); ok {
			if err := json.Unmarshal([]byte(rest), &res); err != nil {
				w.t.Fatalf("client result %q: %v", rest, err)
			}
		}
	}
	res.Stdout = string(out)
	return res
}

func mustAbs(t testing.TB, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// saved: the client saved an entry (its id is positive).
func saved(r clientResult) bool { return r.ID != nil && *r.ID > 0 }

// refusedSave: the client gave up saving (id -1), saying why in words.
func refusedSave(r clientResult, words string) bool {
	return r.ID != nil && *r.ID == -1 && strings.Contains(r.Stdout, words)
}

func matched(r clientResult) string {
	if r.Matched == nil {
		return ""
	}
	return *r.Matched
}

// TestRealClient drives GitHub's own client, npm @actions/cache 6.x, against
// the cache on local disk: the acceptance of issue #34 at 1 MB.
func TestRealClient(t *testing.T) {
	var logs testlog.Buffer
	w := newCacheWorld(t, logs.Logger(slog.LevelInfo))
	defer func() {
		if t.Failed() {
			t.Logf("cache logs:\n%s", logs.Tail(40))
		}
	}()
	ws := t.TempDir()
	const mb = 1 << 20
	mainA := w.token(Job{RepoID: 1, Repo: "o/a", Ref: "refs/heads/main", DefaultBranch: "main"})
	prA := w.token(Job{RepoID: 1, Repo: "o/a", Ref: "refs/pull/7/merge", PullRequest: true, BaseRef: "main", DefaultBranch: "main"})
	targetA := w.token(Job{RepoID: 1, Repo: "o/a", Ref: "refs/heads/main", PullRequest: true, BaseRef: "main", DefaultBranch: "main"})
	mainB := w.token(Job{RepoID: 2, Repo: "o/b", Ref: "refs/heads/main", DefaultBranch: "main"})

	old := cachetest.WriteData(t, ws, mb)
	if r := w.run(w.url, mainA, ws, "save", "data", "deps-linux-old"); !saved(r) {
		t.Fatalf("save: %s", r.Stdout)
	}
	w.clock.Advance(time.Minute)
	sum := cachetest.WriteData(t, ws, mb)
	if r := w.run(w.url, mainA, ws, "save", "data", "deps-linux-new"); !saved(r) {
		t.Fatalf("save: %s", r.Stdout)
	}

	t.Run("restore gets the same bytes", func(t *testing.T) {
		cachetest.ClearData(t, ws)
		r := w.run(w.url, mainA, ws, "restore", "data", "deps-linux-old")
		got, ok := cachetest.ReadData(t, ws)
		if matched(r) != "deps-linux-old" || !ok || got != old {
			t.Fatalf("restore matched %q, same bytes %v:\n%s", matched(r), got == old, r.Stdout)
		}
	})
	t.Run("restore keys fall back to the newest prefix match", func(t *testing.T) {
		cachetest.ClearData(t, ws)
		r := w.run(w.url, mainA, ws, "restore", "data", "deps-linux-missing", "deps-linux-")
		got, _ := cachetest.ReadData(t, ws)
		if matched(r) != "deps-linux-new" || got != sum {
			t.Fatalf("restore matched %q:\n%s", matched(r), r.Stdout)
		}
	})
	t.Run("a second save of a key is refused", func(t *testing.T) {
		cachetest.WriteData(t, ws, mb)
		r := w.run(w.url, mainA, ws, "save", "data", "deps-linux-new")
		if !refusedSave(r, "another job may be creating this cache") {
			t.Fatalf("second save: %s", r.Stdout)
		}
		cachetest.ClearData(t, ws)
		w.run(w.url, mainA, ws, "restore", "data", "deps-linux-new")
		if got, _ := cachetest.ReadData(t, ws); got != sum {
			t.Fatal("the first writer's bytes changed")
		}
	})
	t.Run("repository B reads nothing of A", func(t *testing.T) {
		cachetest.ClearData(t, ws)
		r := w.run(w.url, mainB, ws, "restore", "data", "deps-linux-new", "deps-")
		if matched(r) != "" {
			t.Fatalf("B restored A's %q", matched(r))
		}
		if _, ok := cachetest.ReadData(t, ws); ok {
			t.Fatal("B got A's bytes")
		}
	})
	t.Run("a pull request writes its own scope, reads the default branch", func(t *testing.T) {
		cachetest.WriteData(t, ws, mb)
		if r := w.run(w.url, prA, ws, "save", "data", "pr-poison"); !saved(r) {
			t.Fatalf("PR save: %s", r.Stdout)
		}
		cachetest.ClearData(t, ws)
		if r := w.run(w.url, mainA, ws, "restore", "data", "pr-poison"); matched(r) != "" {
			t.Fatal("the default branch read a pull request's entry")
		}
		if r := w.run(w.url, prA, ws, "restore", "data", "deps-linux-new"); matched(r) != "deps-linux-new" {
			t.Fatalf("the PR did not read the default branch:\n%s", r.Stdout)
		}
	})
	t.Run("a pull request on the default branch's ref cannot write it", func(t *testing.T) {
		cachetest.WriteData(t, ws, mb)
		r := w.run(w.url, targetA, ws, "save", "data", "target-poison")
		// The client words every refused reservation alike, as an info
		// line ("Failed to save: ..."); the step passes.
		if !refusedSave(r, "Failed to save: Unable to reserve cache") {
			t.Fatalf("pull_request_target save: %s", r.Stdout)
		}
		cachetest.ClearData(t, ws)
		if r := w.run(w.url, mainA, ws, "restore", "data", "target-poison"); matched(r) != "" {
			t.Fatal("a pull request's job wrote the default branch's scope")
		}
	})
	t.Run("an expired token restores nothing and fails nothing", func(t *testing.T) {
		short, err := w.tokens.Mint("runner-1", Grant{RepoID: 1, Write: "refs/heads/main", Read: []string{"refs/heads/main"}}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		w.clock.Advance(time.Hour)
		cachetest.ClearData(t, ws)
		r := w.run(w.url, short, ws, "restore", "data", "deps-linux-new")
		if matched(r) != "" || !strings.Contains(r.Stdout, "::warning::") {
			t.Fatalf("expired token: %s", r.Stdout)
		}
	})
	t.Run("an outage is a miss and a warning", func(t *testing.T) {
		// A port nothing listens on: the service is down.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		down := "http://" + l.Addr().String() + "/"
		_ = l.Close()
		cachetest.ClearData(t, ws)
		r := w.run(down, mainA, ws, "restore", "data", "deps-linux-new")
		if matched(r) != "" || !strings.Contains(r.Stdout, "::warning::") {
			t.Fatalf("restore during an outage: %s", r.Stdout)
		}
		cachetest.WriteData(t, ws, mb)
		r = w.run(down, mainA, ws, "save", "data", "during-outage")
		if !refusedSave(r, "Failed to save:") {
			t.Fatalf("save during an outage: %s", r.Stdout)
		}
	})
	m := w.metrics.Snapshot()
	if m.Hits == 0 || m.Misses == 0 || m.BytesUploaded < 2*mb || m.BytesDownloaded < mb {
		t.Fatalf("metrics = %+v", m)
	}
}

// TestRealClientOneGB: the acceptance's size on local disk — GitHub's
// client saves 1 GB (10^9 random bytes; fifteen blocks of 64 MiB, eight at
// a time, then a block list) and restores the same bytes; one save and one
// restore, to keep `make test` lean.
func TestRealClientOneGB(t *testing.T) {
	var logs testlog.Buffer
	w := newCacheWorld(t, logs.Logger(slog.LevelInfo))
	ws := t.TempDir()
	tok := w.token(Job{RepoID: 1, Repo: "o/a", Ref: "refs/heads/main", DefaultBranch: "main"})
	start := time.Now()
	sum := cachetest.WriteData(t, ws, 1_000_000_000)
	if r := w.run(w.url, tok, ws, "save", "data", "big"); !saved(r) {
		t.Fatalf("save: %s\n%s", r.Stdout, logs.Tail(20))
	}
	cachetest.ClearData(t, ws)
	if r := w.run(w.url, tok, ws, "restore", "data", "big"); matched(r) != "big" {
		t.Fatalf("restore: %s\n%s", r.Stdout, logs.Tail(20))
	}
	if got, ok := cachetest.ReadData(t, ws); !ok || got != sum {
		t.Fatal("the restored 1 GB is not what was saved")
	}
	cachetest.ClearData(t, ws)
	t.Logf("1 GB: written, saved, restored and hashed in %s", time.Since(start).Round(100*time.Millisecond))
}
