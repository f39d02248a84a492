package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/runfleet/runfleet/events"
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/queue/local"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/testlog"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

const (
	testToken = "s3cret-operator-token"
	poolA     = "linux-x64"
	poolB     = "arm64"
)

// fixture is the operator API over a real engine: a bbolt store and a local
// queue in a temp dir, simulated providers and GitHub, and running workers.
type fixture struct {
	engine *engine.Engine
	github *ghsim.GitHub
	server *httptest.Server
	client *httpapi.Client
	logs   *testlog.Buffer
}

func newFixture(t *testing.T, token string) *fixture {
	t.Helper()
	dir := t.TempDir()
	st, err := bolt.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	q, err := local.Open(filepath.Join(dir, "queue.db"), local.Options{MaxReceives: 5})
	if err != nil {
		t.Fatal(err)
	}
	pool := func(name, label string) config.Pool {
		return config.Pool{
			Name: name, Owner: "octo-org", Labels: []string{"self-hosted", label},
			MaxRunners: 10, BootstrapTimeout: time.Minute,
			Provider: config.Provider{Type: simulated.Type},
		}
	}
	gh := ghsim.New()
	eng, err := engine.New(engine.Options{
		Store:  st,
		Queue:  q,
		GitHub: gh,
		Providers: map[string]providers.Provider{
			poolA: simulated.NewWithOptions(simulated.Options{}),
			poolB: simulated.NewWithOptions(simulated.Options{}),
		},
		Pools:            []config.Pool{pool(poolA, "x64"), pool(poolB, "arm64")},
		DeleteBackoffMin: 10 * time.Millisecond,
		DeleteBackoffMax: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		eng.Work(ctx, q, engine.WorkerOptions{Concurrency: 2, Visibility: time.Minute, Wait: time.Second})
	}()

	logs := &testlog.Buffer{}
	mux := http.NewServeMux()
	mux.Handle(httpapi.Prefix, httpapi.New(httpapi.Options{Engine: eng, Token: token, Logger: slog.New(slog.NewJSONHandler(logs, nil))}))
	srv := httptest.NewServer(mux)
	client, err := httpapi.NewClient(srv.URL, token, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-done
		_ = q.Close()
		_ = st.Close()
	})
	return &fixture{engine: eng, github: gh, server: srv, client: client, logs: logs}
}

// queue admits a queued job for label's pool and returns its instance name.
func (f *fixture) queue(t *testing.T, jobID int64, label string) string {
	t.Helper()
	ev := &events.WorkflowJobEvent{
		Action:       events.ActionQueued,
		WorkflowJob:  events.WorkflowJob{ID: jobID, RunID: jobID, RunAttempt: 1, Status: "queued", Labels: []string{"self-hosted", label}},
		Repository:   &events.Repository{FullName: "octo-org/app", Name: "app", Owner: &events.Account{Login: "octo-org"}},
		Organization: &events.Account{Login: "octo-org"},
	}
	out, err := f.engine.OnWorkflowJob(context.Background(), "delivery-"+label, ev)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result != engine.ResultCreated {
		t.Fatalf("queued job %d: result %q, want %q", jobID, out.Result, engine.ResultCreated)
	}
	return out.Instance
}

// waitStatus polls the engine until the instance has status want. It tests
// behaviour, not speed: the deadline is generous.
func (f *fixture) waitStatus(t *testing.T, name string, want runner.Status) *runner.Instance {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		inst, err := f.engine.GetInstance(context.Background(), name)
		if err == nil && inst.Status == want {
			return inst
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s never reached %s (last: %+v, %v)", name, want, inst, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
