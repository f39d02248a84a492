package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/events"
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/queue/local"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/testlog"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

// harness is one engine over the real embedded adapters (a bbolt store and a
// durable local queue in a temp dir), the simulated provider and the
// simulated GitHub.
type harness struct {
	t        *testing.T
	dir      string
	store    *bolt.Store
	queue    *local.Queue
	github   *ghsim.GitHub
	provider *simulated.Provider
	engine   *engine.Engine
	pool     config.Pool
	logs     *testlog.Buffer
	opts     harnessOptions

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

type harnessOptions struct {
	maxRunners       int
	bootstrapTimeout time.Duration
	faults           simulated.Faults
	createLatency    time.Duration
	now              func() time.Time
	providerTimeout  time.Duration
	minIdle          int
	// wrap decorates the simulated provider (to record call order).
	wrap func(providers.Provider) providers.Provider
	// outbox keeps the queue in the store's file (bolt.OpenWithQueue, as
	// `runfleet serve` does), so the engine admits jobs through
	// store.Outbox; otherwise the store and the queue have a file each.
	outbox bool
}

// layouts are the two ways the embedded adapters can be opened, for tests
// that must hold for both.
var layouts = map[string]harnessOptions{"separate files": {}, "outbox": {outbox: true}}

const (
	testPool       = "linux-x64"
	testController = "test-ctl"
)

func newHarness(t *testing.T, o harnessOptions) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, logs: &testlog.Buffer{}}
	if o.maxRunners == 0 {
		o.maxRunners = 10
	}
	if o.bootstrapTimeout == 0 {
		o.bootstrapTimeout = 5 * time.Second
	}
	h.pool = config.Pool{
		Name:             testPool,
		Owner:            "octo-org",
		Labels:           []string{"self-hosted", "linux", "x64"},
		MaxRunners:       o.maxRunners,
		MinIdle:          o.minIdle,
		BootstrapTimeout: o.bootstrapTimeout,
		Provider:         config.Provider{Type: simulated.Type},
	}
	h.provider = simulated.NewWithOptions(simulated.Options{CreateLatency: o.createLatency, Faults: o.faults})
	h.github = ghsim.New()
	h.open(o)
	return h
}

// open (re)opens the store and queue files and builds an engine over them,
// as a restarted `runfleet serve` would.
func (h *harness) open(o harnessOptions) {
	t := h.t
	var st store.Store
	if o.outbox {
		qs, err := bolt.OpenWithQueue(filepath.Join(h.dir, "state.db"), local.Options{MaxReceives: 5})
		if err != nil {
			t.Fatal(err)
		}
		// The queue first, then the store, which closes the shared file.
		st, h.store, h.queue = qs, qs.Store, qs.Queue()
	} else {
		bs, err := bolt.Open(filepath.Join(h.dir, "state.db"))
		if err != nil {
			t.Fatal(err)
		}
		q, err := local.Open(filepath.Join(h.dir, "queue.db"), local.Options{MaxReceives: 5})
		if err != nil {
			t.Fatal(err)
		}
		st, h.store, h.queue = bs, bs, q
	}
	q := h.queue
	var prov providers.Provider = h.provider
	if o.wrap != nil {
		prov = o.wrap(prov)
	}
	logger := slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e, err := engine.New(engine.Options{
		ControllerID:     testController,
		Store:            st,
		Queue:            q,
		GitHub:           h.github,
		Providers:        map[string]providers.Provider{testPool: prov},
		Pools:            []config.Pool{h.pool},
		Logger:           logger,
		Now:              o.now,
		DeleteBackoffMin: 20 * time.Millisecond,
		DeleteBackoffMax: 200 * time.Millisecond,
		ProviderTimeout:  o.providerTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.engine = e
	h.opts = o
	t.Cleanup(h.close)
}

// restart closes everything and opens it again from the same files.
func (h *harness) restart() {
	h.close()
	h.open(h.opts)
}

// close stops the workers and closes the files (idempotent).
func (h *harness) close() {
	h.stopWorkers()
	if h.queue != nil {
		_ = h.queue.Close()
		h.queue = nil
	}
	if h.store != nil {
		_ = h.store.Close()
		h.store = nil
	}
}

func (h *harness) startWorkers(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan struct{})
	done := h.done
	go func() {
		defer close(done)
		h.engine.Work(ctx, h.queue, engine.WorkerOptions{Concurrency: n, Visibility: 2 * time.Second, Wait: 200 * time.Millisecond})
	}()
}

func (h *harness) stopWorkers() {
	h.mu.Lock()
	cancel, done := h.cancel, h.done
	h.cancel, h.done = nil, nil
	h.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// job builds a workflow_job event for the test pool.
func job(action string, id int64, runnerName string) *events.WorkflowJobEvent {
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

func nameFor(id int64) string { return runner.InstanceName(testPool, id, 1) }

func (h *harness) deliver(ev *events.WorkflowJobEvent) engine.Outcome {
	h.t.Helper()
	out, err := h.engine.OnWorkflowJob(context.Background(), fmt.Sprintf("d-%d-%s", ev.WorkflowJob.ID, ev.Action), ev)
	if err != nil {
		h.t.Fatalf("OnWorkflowJob(%s %d): %v", ev.Action, ev.WorkflowJob.ID, err)
	}
	return out
}

func (h *harness) instance(name string) *runner.Instance {
	h.t.Helper()
	inst, err := h.store.GetInstance(context.Background(), name)
	if err != nil {
		h.t.Fatalf("GetInstance(%s): %v", name, err)
	}
	return inst
}

// waitFor polls cond until it holds; the deadline is generous because this
// asserts behaviour, not speed.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out waiting for %s\nlogs:\n%s", what, h.logs.Tail(40))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (h *harness) waitStatus(name string, want runner.Status) *runner.Instance {
	h.t.Helper()
	var last *runner.Instance
	h.waitFor(fmt.Sprintf("%s to reach %s", name, want), func() bool {
		inst, err := h.store.GetInstance(context.Background(), name)
		if err != nil {
			return false
		}
		last = inst
		return inst.Status == want
	})
	return last
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }
