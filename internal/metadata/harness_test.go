package metadata_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/events"
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/internal/queue/local"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/testlog"
	"github.com/runfleet/runfleet/internal/webhook"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

const (
	testPool       = "linux-x64"
	testController = "ctl-meta"
)

var (
	testKey       = []byte("metadata-test-signing-key-0123456789abcdef")
	webhookSecret = []byte("metadata-test-webhook-secret")
)

// bootHarness is the real engine (bbolt store, durable local queue,
// workers) behind the real metadata handler on an HTTP server, with the
// simulated provider and GitHub. The provider is wrapped to record every
// create request, as a real provider would receive it.
type bootHarness struct {
	t        *testing.T
	store    *bolt.Store
	queue    *local.Queue
	github   *ghsim.GitHub
	provider *simulated.Provider
	recorder *recordingProvider
	engine   *engine.Engine
	tokens   *metadata.Tokens
	server   *httptest.Server
	logs     *testlog.Buffer

	clockMu sync.Mutex
	offset  time.Duration
}

type harnessOptions struct {
	bootstrapTimeout time.Duration
	// failFirstCreates makes the provider fail that many creates before
	// passing them on, so a create is retried with a new attempt.
	failFirstCreates int
	caBundle         []byte
	// provider replaces the simulated provider (the e2e test runs an
	// external provider binary).
	provider providers.Provider
}

func newBootHarness(t *testing.T, o harnessOptions) *bootHarness {
	t.Helper()
	if o.bootstrapTimeout == 0 {
		o.bootstrapTimeout = 10 * time.Minute
	}
	h := &bootHarness{t: t, logs: &testlog.Buffer{}}
	dir := t.TempDir()
	st, err := bolt.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	q, err := local.Open(filepath.Join(dir, "queue.db"), local.Options{MaxReceives: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	h.store, h.queue = st, q
	h.github = ghsim.New()
	h.provider = simulated.NewWithOptions(simulated.Options{})
	var prov providers.Provider = h.provider
	if o.provider != nil {
		prov = o.provider
	}
	h.recorder = &recordingProvider{Provider: prov, failFirst: o.failFirstCreates, store: st}
	// The token clock can be moved forward to expire tokens.
	h.tokens, err = metadata.NewTokens(testKey, testController, h.now)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	var handler http.Handler
	h.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(h.server.Close)
	metadataURL, callbackURL := metadata.BaseURLs(h.server.URL)

	pool := config.Pool{
		Name: testPool, Owner: "octo-org/hello-world", Labels: []string{"self-hosted", "linux", "x64"},
		MaxRunners: 10, BootstrapTimeout: o.bootstrapTimeout, Provider: config.Provider{Type: simulated.Type},
	}
	h.engine, err = engine.New(engine.Options{
		ControllerID:     testController,
		Store:            st,
		Queue:            q,
		GitHub:           h.github,
		Providers:        map[string]providers.Provider{testPool: h.recorder},
		Pools:            []config.Pool{pool},
		Logger:           logger,
		DeleteBackoffMin: 10 * time.Millisecond,
		DeleteBackoffMax: 100 * time.Millisecond,
		MetadataURL:      metadataURL,
		CallbackURL:      callbackURL,
		InstanceToken:    h.tokens.Mint,
	})
	if err != nil {
		t.Fatal(err)
	}
	mh, err := metadata.New(metadata.Options{
		Engine: h.engine, Tokens: h.tokens, MetadataURL: metadataURL, CallbackURL: callbackURL,
		CACertBundle: o.caBundle, Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	intake, err := webhook.New(webhook.Options{Secret: webhookSecret, Handler: h.engine, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/webhook", intake)
	mux.Handle(metadata.MetadataPrefix, mh)
	mux.Handle(metadata.CallbackPrefix, mh)
	handler = mux

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.engine.Work(ctx, q, engine.WorkerOptions{Concurrency: 2, Visibility: 5 * time.Second, Wait: 100 * time.Millisecond})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return h
}

func (h *bootHarness) now() time.Time {
	h.clockMu.Lock()
	defer h.clockMu.Unlock()
	return time.Now().Add(h.offset)
}

// advanceTokenClock moves the clock tokens are checked against.
func (h *bootHarness) advanceTokenClock(d time.Duration) {
	h.clockMu.Lock()
	defer h.clockMu.Unlock()
	h.offset += d
}

// queueJob delivers a queued workflow_job webhook for job id and returns
// the instance name serving it.
func (h *bootHarness) queueJob(id int64) string {
	h.t.Helper()
	out, err := h.engine.OnWorkflowJob(context.Background(), fmt.Sprintf("d-%d-queued", id), jobEvent("queued", id, ""))
	if err != nil {
		h.t.Fatalf("queued webhook: %v", err)
	}
	if out.Result != engine.ResultCreated {
		h.t.Fatalf("queued webhook outcome %+v, want %s", out, engine.ResultCreated)
	}
	return out.Instance
}

// deliver signs a workflow_job webhook and POSTs it to the intake, as
// GitHub does.
func (h *bootHarness) deliver(action string, id int64, runnerName string) {
	h.t.Helper()
	body, err := json.Marshal(jobEvent(action, id, runnerName))
	if err != nil {
		h.t.Fatal(err)
	}
	res, err := webhook.Send(context.Background(), h.server.URL+"/webhook", webhookSecret, "workflow_job", body, "")
	if err != nil {
		h.t.Fatal(err)
	}
	if res.StatusCode/100 != 2 {
		h.t.Fatalf("%s webhook for job %d answered %d %s", action, id, res.StatusCode, res.Body)
	}
}

func (h *bootHarness) completeJob(id int64, name string) {
	h.t.Helper()
	if _, err := h.engine.OnWorkflowJob(context.Background(), fmt.Sprintf("d-%d-completed", id), jobEvent("completed", id, name)); err != nil {
		h.t.Fatalf("completed webhook: %v", err)
	}
}

func jobEvent(action string, id int64, runnerName string) *events.WorkflowJobEvent {
	ev := &events.WorkflowJobEvent{
		Action: action,
		WorkflowJob: events.WorkflowJob{
			ID: id, RunID: id * 10, RunAttempt: 1, Status: action,
			Labels: []string{"self-hosted", "linux", "x64"},
		},
		Repository:   &events.Repository{FullName: "octo-org/hello-world", Name: "hello-world"},
		Organization: &events.Account{Login: "octo-org"},
		Installation: &events.Installation{ID: 42},
	}
	if runnerName != "" {
		ev.WorkflowJob.RunnerName = &runnerName
	}
	return ev
}

func (h *bootHarness) instance(name string) *runner.Instance {
	h.t.Helper()
	inst, err := h.store.GetInstance(context.Background(), name)
	if err != nil {
		h.t.Fatalf("GetInstance(%s): %v", name, err)
	}
	return inst
}

func (h *bootHarness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s\nlogs:\n%s", what, h.logs.Tail(30))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *bootHarness) waitStatus(name string, want runner.Status) *runner.Instance {
	h.t.Helper()
	var last *runner.Instance
	h.waitFor(name+" to reach "+string(want), func() bool {
		inst, err := h.store.GetInstance(context.Background(), name)
		last = inst
		return err == nil && inst.Status == want
	})
	return last
}

// createRequest waits for the provider's create request for name (the
// last one, after retries) and returns it.
func (h *bootHarness) createRequest(name string, attempt int) providers.CreateRequest {
	h.t.Helper()
	var req providers.CreateRequest
	h.waitFor(fmt.Sprintf("create request %d for %s", attempt, name), func() bool {
		reqs := h.recorder.requests(name)
		if len(reqs) < attempt {
			return false
		}
		req = reqs[attempt-1]
		return true
	})
	return req
}

// machine is a booting runner machine: an HTTP client holding what its
// provider's create request gave it.
type machine struct {
	t           *testing.T
	token       string
	metadataURL string
	callbackURL string
}

func (h *bootHarness) machineFor(req providers.CreateRequest) *machine {
	return &machine{t: h.t, token: req.InstanceToken, metadataURL: req.MetadataURL, callbackURL: req.CallbackURL}
}

// reply is one HTTP answer, read whole.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) errorText(t *testing.T) string {
	t.Helper()
	var e struct {
		Error  string `json:"error"`
		Status int    `json:"status"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil {
		t.Fatalf("refusal body is not the JSON error shape: %s", r.body)
	}
	if e.Status != r.status || e.Error == "" {
		t.Fatalf("refusal body %s does not name status %d and a reason", r.body, r.status)
	}
	return e.Error
}

func (m *machine) do(method, url string, body []byte) reply {
	m.t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		m.t.Fatal(err)
	}
	if m.token != "" {
		req.Header.Set("Authorization", "Bearer "+m.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		m.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: data}
}

func (m *machine) get(path string) reply { return m.do(http.MethodGet, m.metadataURL+"/"+path, nil) }

func (m *machine) report(status, message string, agentID any) reply {
	body, _ := json.Marshal(map[string]any{"status": status, "message": message, "agent_id": agentID})
	return m.do(http.MethodPost, m.callbackURL+"/status", body)
}

// recordingProvider records every create request and can fail the first
// few, so tests see what a real provider would be handed.
type recordingProvider struct {
	providers.Provider
	failFirst int
	// store is read for the JIT configuration each create was made with.
	store *bolt.Store

	mu    sync.Mutex
	calls int
	reqs  map[string][]providers.CreateRequest
	jits  map[string][]string
}

func (p *recordingProvider) CreateInstance(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	var encoded string
	if creds, err := p.store.GetRunnerCredentials(ctx, req.Name); err == nil {
		encoded = creds.EncodedJITConfig
	}
	p.mu.Lock()
	if p.reqs == nil {
		p.reqs, p.jits = map[string][]providers.CreateRequest{}, map[string][]string{}
	}
	p.reqs[req.Name] = append(p.reqs[req.Name], req)
	p.jits[req.Name] = append(p.jits[req.Name], encoded)
	p.calls++
	fail := p.calls <= p.failFirst
	p.mu.Unlock()
	if fail {
		return providers.Instance{}, &providers.Error{Op: "CreateInstance", Instance: req.Name, Fault: "test: create refused"}
	}
	return p.Provider.CreateInstance(ctx, req)
}

func (p *recordingProvider) requests(name string) []providers.CreateRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]providers.CreateRequest(nil), p.reqs[name]...)
}

func (p *recordingProvider) jitConfigs(name string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.jits[name]...)
}

// jitConfig is a JIT configuration as the simulated GitHub made it
// (GitHub's shape) and the engine stored it for the machine to fetch.
type jitConfig struct {
	encoded string
	files   map[string][]byte
}

// jitConfig returns what the engine had stored for name when it made the
// provider's create request for attempt, decoded as the runner reads it.
func (h *bootHarness) jitConfig(name string, attempt int) jitConfig {
	h.t.Helper()
	var encoded string
	h.waitFor(fmt.Sprintf("create %d for %s", attempt, name), func() bool {
		configs := h.recorder.jitConfigs(name)
		if len(configs) < attempt {
			return false
		}
		encoded = configs[attempt-1]
		return true
	})
	if encoded == "" {
		h.t.Fatalf("no JIT configuration was stored before create %d of %s", attempt, name)
	}
	doc, err := base64.StdEncoding.DecodeString(encoded)
	var entries map[string]string
	if err == nil {
		err = json.Unmarshal(doc, &entries)
	}
	if err != nil {
		h.t.Fatalf("JIT configuration of %s is not base64 of a JSON object of strings: %v", name, err)
	}
	files := make(map[string][]byte, len(entries))
	for file, content := range entries {
		if files[file], err = base64.StdEncoding.DecodeString(content); err != nil {
			h.t.Fatalf("JIT file %s of %s is not base64: %v", file, name, err)
		}
	}
	return jitConfig{encoded: encoded, files: files}
}
