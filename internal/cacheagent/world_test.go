package cacheagent

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/cache/cachetest"

	"github.com/runfleet/runfleet/internal/cache"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/testlog"
)

var testKey = bytes.Repeat([]byte("k"), 32)

// tokenBox is a TokenSource the test swaps between jobs.
type tokenBox struct{ v atomic.Value }

func (b *tokenBox) set(s string) { b.v.Store(s) }
func (b *tokenBox) Token(context.Context) (string, error) {
	s, _ := b.v.Load().(string)
	if s == "" {
		return "", errors.New("no job registered")
	}
	return s, nil
}

// ledger is runfleet's ledger as the job token handler reads it: which
// repository each machine's job is of.
type ledger map[string]cache.MachineJob

func (l ledger) MachineJob(_ context.Context, instance string) (cache.MachineJob, error) {
	return l[instance], nil
}

// agentWorld is runfleet's cache on local disk (serve's part), the agent
// in front of it on HTTPS with the machine's CA, and GitHub's client.
type agentWorld struct {
	t        testing.TB
	client   string
	caFile   string
	agentURL string
	cacheURL string
	clock    *testclock.Clock
	tokens   *cache.Tokens
	box      *tokenBox
	jobs     *JobTokens
	// restarted is the agent's token source when it trades (useJobTokens).
	restarted *restartedJobs
	agents    *cache.AgentTokens
	ledger    ledger
	agent     *Agent
	metrics   *cache.Metrics
	logs      *testlog.Buffer
}

func newAgentWorld(t testing.TB, store cache.Store, cacheURLOverride string, useJobTokens bool) *agentWorld {
	t.Helper()
	client := cachetest.InstallClient(t)
	logs := &testlog.Buffer{}
	log := logs.Logger(slog.LevelInfo)
	clock := testclock.At(time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC))
	if store == nil {
		d, err := cache.OpenDisk(t.TempDir(), cache.EvictionPolicy{MaxAge: 7 * 24 * time.Hour}, clock.Now, log)
		if err != nil {
			t.Fatal(err)
		}
		store = d
	}
	tokens, err := cache.NewTokens(testKey, "ctl", clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(nil)
	srv.Start()
	t.Cleanup(srv.Close)
	metrics := &cache.Metrics{}
	h, err := cache.NewHandler(cache.Options{Store: store, Tokens: tokens, BlobKey: bytes.Repeat([]byte("b"), 32),
		PublicURL: srv.URL, Now: clock.Now, Log: log, Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	agents, err := cache.NewAgentTokens(testKey, "ctl", clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	led := ledger{}
	bindings, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bindings.Close() })
	jth, err := cache.NewJobTokenHandler(cache.JobTokenOptions{Agents: agents, Tokens: tokens, Ledger: led, Bindings: bindings, Now: clock.Now, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", h)
	mux.Handle(cache.JobTokenPath, jth)
	srv.Config.Handler = mux
	cacheURL := srv.URL
	if cacheURLOverride != "" {
		cacheURL = cacheURLOverride
	}

	ca, err := NewCA(time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	// The client resolves the agent's name the way a runner machine
	// resolves the results host through /etc/hosts: here "localhost".
	leaf, err := ca.Leaf("localhost")
	if err != nil {
		t.Fatal(err)
	}
	box := &tokenBox{}
	var src TokenSource = box
	var jobs *JobTokens
	restarted := &restartedJobs{}
	if useJobTokens {
		agentTok, err := agents.Mint("m-1", "linux", 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		restarted.fresh = func() *JobTokens {
			return &JobTokens{URL: cacheURL + cache.JobTokenPath, AgentToken: func() (string, error) { return agentTok, nil }, Now: clock.Now, Log: log}
		}
		jobs = restarted.fresh()
		restarted.cur.Store(jobs)
		src = restarted
	}
	agent, err := New(Options{CacheURL: cacheURL, Tokens: src, Upstream: http.DefaultTransport, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	as := httptest.NewUnstartedServer(agent)
	as.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	as.StartTLS()
	t.Cleanup(as.Close)
	_, port, _ := net.SplitHostPort(as.Listener.Addr().String())
	return &agentWorld{t: t, client: client, caFile: caFile, agentURL: "https://localhost:" + port + "/", cacheURL: cacheURL, clock: clock,
		tokens: tokens, box: box, jobs: jobs, restarted: restarted, agents: agents, ledger: led, agent: agent, metrics: metrics, logs: logs}
}

// restartedJobs is the agent's job tokens across a restart of the agent:
// what a job that became root on its machine can do (systemctl restart),
// so a registration is taken again, with the same agent token.
type restartedJobs struct {
	cur   atomic.Pointer[JobTokens]
	fresh func() *JobTokens
}

func (r *restartedJobs) Token(ctx context.Context) (string, error) { return r.cur.Load().Token(ctx) }

// restartAgent forgets the registration, as a restarted agent has.
func (w *agentWorld) restartAgent() {
	w.jobs = w.restarted.fresh()
	w.restarted.cur.Store(w.jobs)
}

func (w *agentWorld) job(j cache.Job) string {
	w.t.Helper()
	g, err := cache.GrantFor(j)
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

// run runs GitHub's client as a node action on the machine: the runner
// gave it GitHub's results URL and GitHub's token, which the agent stands
// in for; the agent's CA is trusted through NODE_EXTRA_CA_CERTS.
func (w *agentWorld) run(workspace string, args ...string) clientResult {
	w.t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "cache", "testdata", "client.mjs"))
	if err != nil {
		w.t.Fatal(err)
	}
	cmd := exec.Command("node", append([]string{script}, args...)...)
	cmd.Dir = workspace
	cmd.Env = append(os.Environ(),
		"CACHE_CLIENT_DIR="+w.client,
		"NODE_EXTRA_CA_CERTS="+w.caFile,
		"ACTIONS_CACHE_SERVICE_V2=true",
		"ACTIONS_RESULTS_URL="+w.agentURL,
		"ACTIONS_RUNTIME_TOKEN=github-runtime-token-the-agent-replaces",
		"ACTIONS_CACHE_URL=",
		"GITHUB_SERVER_URL=https://github.com",
		"GITHUB_WORKSPACE="+workspace,
		"RUNNER_TEMP="+w.t.TempDir(),
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

func saved(r clientResult) bool { return r.ID != nil && *r.ID > 0 }

func refusedSave(r clientResult, words string) bool {
	return r.ID != nil && *r.ID == -1 && strings.Contains(r.Stdout, words)
}

func matched(r clientResult) string {
	if r.Matched == nil {
		return ""
	}
	return *r.Matched
}

func writeFile(t testing.TB, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func cryptoRandRead(p []byte) (int, error) { return rand.Read(p) }
