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
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/webhook"
	"github.com/runfleet/runfleet/providers"
)

var (
	testKey       = []byte("metadata-test-signing-key-0123456789abcdef")
	webhookSecret = []byte("metadata-test-webhook-secret")
)

// bootHarness is the test world (engine, bbolt store and queue, workers,
// simulated provider and GitHub) behind the real metadata handler and
// webhook intake on an HTTP server. The world's recorder keeps every create
// request, as a real provider would receive it, and the JIT configuration
// the engine had stored for the machine by then.
type bootHarness struct {
	*enginetest.World
	tokens *metadata.Tokens
	server *httptest.Server
	// tokenClock is what instance tokens are minted and checked against.
	tokenClock testclock.Clock

	mu   sync.Mutex
	jits map[string][]string
}

type harnessOptions struct {
	bootstrapTimeout time.Duration
	// failFirstCreates makes the provider refuse that many creates, so a
	// create is retried with a new attempt.
	failFirstCreates int
	caBundle         []byte
	// provider replaces the simulated provider (the e2e test runs an
	// external provider binary); installationID is then the one its pool
	// id derives from.
	provider       providers.Provider
	installationID string
	// cacheAgent serves metadata/cache-agent (nil: the cache is off).
	cacheAgent metadata.CacheAgentFunc
}

func newBootHarness(t *testing.T, o harnessOptions) *bootHarness {
	t.Helper()
	if o.bootstrapTimeout == 0 {
		o.bootstrapTimeout = 10 * time.Minute
	}
	h := &bootHarness{jits: map[string][]string{}}
	var err error
	h.tokens, err = metadata.NewTokens(testKey, enginetest.Controller, h.tokenClock.Now)
	if err != nil {
		t.Fatal(err)
	}
	var handler http.Handler
	h.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	t.Cleanup(h.server.Close)
	metadataURL, callbackURL := metadata.BaseURLs(h.server.URL)

	opts := enginetest.Options{
		InstallationID: o.installationID,
		Pools: enginetest.OnePool(func(p *runner.Pool) {
			// Runners are registered at the repository.
			p.Owner, p.BootstrapTimeout = runner.Owner{Org: enginetest.Owner, Repo: "hello-world"}, o.bootstrapTimeout
		}),
		Engine: func(e *engine.Options) {
			e.MetadataURL, e.CallbackURL, e.InstanceToken = metadataURL, callbackURL, h.tokens.Mint
		},
	}
	if o.provider != nil {
		opts.WrapProvider = func(string, providers.Provider) providers.Provider { return o.provider }
	}
	h.World = enginetest.NewWorld(t, opts)
	h.Recorder.FailCreates(o.failFirstCreates, false)
	h.Recorder.BeforeCreate(h.noteJIT)

	logger := h.Logs.Logger(slog.LevelDebug)
	mh, err := metadata.New(metadata.Options{
		Engine: h.Engine, Tokens: h.tokens, MetadataURL: metadataURL, CallbackURL: callbackURL,
		CACertBundle: o.caBundle, CacheAgent: o.cacheAgent, Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	intake, err := webhook.New(webhook.Options{Secret: webhookSecret, Handler: h.Engine, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/webhook", intake)
	mux.Handle(metadata.MetadataPrefix, mh)
	mux.Handle(metadata.CallbackPrefix, mh)
	handler = mux
	h.StartWorkers(2)
	return h
}

// noteJIT keeps the JIT configuration stored for a machine when its
// create is asked for.
func (h *bootHarness) noteJIT(ctx context.Context, req providers.CreateRequest) {
	var encoded string
	if creds, err := h.Store.GetRunnerCredentials(ctx, req.Name); err == nil {
		encoded = creds.EncodedJITConfig
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.jits[req.Name] = append(h.jits[req.Name], encoded)
}

// advanceTokenClock moves the clock tokens are checked against.
func (h *bootHarness) advanceTokenClock(d time.Duration) { h.tokenClock.Advance(d) }

// queueJob hands the engine a queued job id and returns the instance name
// serving it.
func (h *bootHarness) queueJob(id int64) string {
	h.TB.Helper()
	out := h.Deliver(enginetest.Event(runner.ActionQueued, id, ""))
	if out.Result != engine.ResultCreated {
		h.TB.Fatalf("queued outcome %+v, want %s", out, engine.ResultCreated)
	}
	return out.Instance
}

// deliver signs a workflow_job webhook and POSTs it to the intake, as
// GitHub does.
func (h *bootHarness) deliver(action string, id int64, runnerName string) {
	h.TB.Helper()
	body, err := json.Marshal(webhookPayload(action, id, runnerName))
	if err != nil {
		h.TB.Fatal(err)
	}
	res, err := webhook.Send(context.Background(), h.server.URL+"/webhook", webhookSecret, "workflow_job", body, "")
	if err != nil {
		h.TB.Fatal(err)
	}
	if res.StatusCode/100 != 2 {
		h.TB.Fatalf("%s webhook for job %d answered %d %s", action, id, res.StatusCode, res.Body)
	}
}

func (h *bootHarness) completeJob(id int64, name string) {
	h.TB.Helper()
	h.Deliver(enginetest.Event(runner.ActionCompleted, id, name))
}

// webhookPayload is enginetest.Event as GitHub delivers it.
func webhookPayload(action string, id int64, runnerName string) *webhook.WorkflowJobEvent {
	ev := &webhook.WorkflowJobEvent{
		Action: action,
		WorkflowJob: webhook.WorkflowJob{
			ID: id, RunID: id * 10, RunAttempt: 1, Status: action, Labels: enginetest.Labels(),
		},
		Repository:   &webhook.Repository{FullName: enginetest.Repository, Name: "hello-world"},
		Organization: &webhook.Account{Login: enginetest.Owner},
		Installation: &webhook.Installation{ID: enginetest.Installation},
	}
	if runnerName != "" {
		ev.WorkflowJob.RunnerName = &runnerName
	}
	return ev
}

// createRequest waits for the provider's create request number attempt
// for name and returns it.
func (h *bootHarness) createRequest(name string, attempt int) providers.CreateRequest {
	h.TB.Helper()
	var req providers.CreateRequest
	h.WaitFor(fmt.Sprintf("create request %d for %s", attempt, name), func() bool {
		reqs := h.Recorder.Requests(name)
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
	t           testing.TB
	token       string
	metadataURL string
	callbackURL string
}

func (h *bootHarness) machineFor(req providers.CreateRequest) *machine {
	return &machine{t: h.TB, token: req.InstanceToken, metadataURL: req.MetadataURL, callbackURL: req.CallbackURL}
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

// jitConfig is a JIT configuration as the simulated GitHub made it
// (GitHub's shape) and the engine stored it for the machine to fetch.
type jitConfig struct {
	encoded string
	files   map[string][]byte
}

// jitConfig returns what the engine had stored for name when it made the
// provider's create request for attempt, decoded as the runner reads it.
func (h *bootHarness) jitConfig(name string, attempt int) jitConfig {
	h.TB.Helper()
	var encoded string
	h.WaitFor(fmt.Sprintf("create %d for %s", attempt, name), func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.jits[name]) < attempt {
			return false
		}
		encoded = h.jits[name][attempt-1]
		return true
	})
	if encoded == "" {
		h.TB.Fatalf("no JIT configuration was stored before create %d of %s", attempt, name)
	}
	doc, err := base64.StdEncoding.DecodeString(encoded)
	var entries map[string]string
	if err == nil {
		err = json.Unmarshal(doc, &entries)
	}
	if err != nil {
		h.TB.Fatalf("JIT configuration of %s is not base64 of a JSON object of strings: %v", name, err)
	}
	files := make(map[string][]byte, len(entries))
	for file, content := range entries {
		if files[file], err = base64.StdEncoding.DecodeString(content); err != nil {
			h.TB.Fatalf("JIT file %s of %s is not base64: %v", file, name, err)
		}
	}
	return jitConfig{encoded: encoded, files: files}
}
