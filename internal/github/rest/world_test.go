package rest_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/events"
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/queue/local"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/testlog"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

// world is the real engine over the embedded adapters (a bbolt store and a
// durable local queue in a temp dir) and the simulated provider, talking to
// the fake GitHub through runfleet's real client.
type world struct {
	t        testing.TB
	fake     *githubtest.Server
	gh       *rest.Client
	store    *bolt.Store
	queue    *local.Queue
	provider *simulated.Provider
	engine   *engine.Engine
	logs     *testlog.Buffer
}

type worldOptions struct {
	// deleteBackoffMax is the engine's longest delete retry delay — and how
	// long a delete refused as busy waits; default 200ms.
	deleteBackoffMax time.Duration
	faults           simulated.Faults
	// defaultInstallation is github.app.installation_id; default 777.
	defaultInstallation int64
	fakeOptions         []githubtest.Option
	quiet               bool // log at info, for benchmarks
}

const (
	worldPool       = "linux"
	worldController = "test"
)

func newWorld(t testing.TB, o worldOptions) *world {
	t.Helper()
	if o.deleteBackoffMax == 0 {
		o.deleteBackoffMax = 200 * time.Millisecond
	}
	if o.defaultInstallation == 0 {
		o.defaultInstallation = testInstallationID
	}
	w := &world{t: t, logs: &testlog.Buffer{}}
	w.fake = fakeGitHub(t, o.fakeOptions...)
	level := slog.LevelDebug
	if o.quiet {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewJSONHandler(w.logs, &slog.HandlerOptions{Level: level}))
	gh, err := rest.New(rest.Options{
		BaseURL:        w.fake.GHESURL(),
		AppID:          testAppID,
		PrivateKey:     appKey().PrivateKeyPEM,
		InstallationID: o.defaultInstallation,
		Logger:         logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	w.gh = gh

	dir := t.TempDir()
	if w.store, err = bolt.Open(filepath.Join(dir, "state.db")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.store.Close() })
	if w.queue, err = local.Open(filepath.Join(dir, "queue.db"), local.Options{MaxReceives: 10}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.queue.Close() })
	w.provider = simulated.NewWithOptions(simulated.Options{Faults: o.faults})
	pool := config.Pool{
		Name:             worldPool,
		Owner:            testOrg,
		Labels:           []string{"self-hosted", "linux", "x64"},
		MaxRunners:       10,
		BootstrapTimeout: 5 * time.Second,
		Provider:         config.Provider{Type: simulated.Type},
	}
	w.engine, err = engine.New(engine.Options{
		ControllerID:     worldController,
		Store:            w.store,
		Queue:            w.queue,
		GitHub:           gh,
		Providers:        map[string]providers.Provider{worldPool: w.provider},
		Pools:            []config.Pool{pool},
		Logger:           logger,
		DeleteBackoffMin: 20 * time.Millisecond,
		DeleteBackoffMax: o.deleteBackoffMax,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.engine.Work(ctx, w.queue, engine.WorkerOptions{Concurrency: 2, Visibility: 10 * time.Second, Wait: 100 * time.Millisecond})
	}()
	// Registered last, so it runs first: workers stop before the files close.
	t.Cleanup(func() { cancel(); <-done })
	return w
}

func instanceName(jobID int64) string { return runner.InstanceName(worldPool, jobID, 1) }

// event is a workflow_job webhook for the world's org, as GitHub sends it.
func event(action string, jobID int64, runnerName string) *events.WorkflowJobEvent {
	ev := &events.WorkflowJobEvent{
		Action: action,
		WorkflowJob: events.WorkflowJob{
			ID: jobID, RunID: jobID * 10, RunAttempt: 1, Status: action,
			Labels: []string{"self-hosted", "linux", "x64"},
		},
		Repository:   &events.Repository{FullName: testRepo, Name: "hello-world"},
		Organization: &events.Account{Login: testOrg},
		Installation: &events.Installation{ID: testInstallationID},
	}
	if runnerName != "" {
		ev.WorkflowJob.RunnerName = &runnerName
	}
	return ev
}

// deliveries numbers delivery ids: every webhook is a new delivery.
var deliveries atomic.Int64

func (w *world) deliver(action string, jobID int64, runnerName string) engine.Outcome {
	w.t.Helper()
	id := fmt.Sprintf("delivery-%d", deliveries.Add(1))
	out, err := w.engine.OnWorkflowJob(context.Background(), id, event(action, jobID, runnerName))
	if err != nil {
		w.t.Fatalf("OnWorkflowJob(%s %d): %v", action, jobID, err)
	}
	return out
}

func (w *world) instance(name string) *runner.Instance {
	w.t.Helper()
	inst, err := w.store.GetInstance(context.Background(), name)
	if err != nil {
		w.t.Fatalf("GetInstance(%s): %v", name, err)
	}
	return inst
}

// waitFor polls cond; the deadline is generous because it asserts
// behaviour, not speed.
func (w *world) waitFor(what string, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out waiting for %s\nlogs:\n%s", what, w.logs.Tail(30))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (w *world) waitStatus(name string, want runner.Status) *runner.Instance {
	w.t.Helper()
	var last *runner.Instance
	w.waitFor(fmt.Sprintf("%s to reach %s", name, want), func() bool {
		inst, err := w.store.GetInstance(context.Background(), name)
		last = inst
		return err == nil && inst.Status == want
	})
	return last
}

// startJob plays GitHub handing the job to the instance's runner (online,
// busy) and delivers in_progress.
func (w *world) startJob(jobID int64) {
	w.t.Helper()
	name := instanceName(jobID)
	w.fake.AddJob(githubtest.Job{ID: jobID, Repo: testRepo, Labels: []string{"self-hosted", "linux", "x64"}})
	if !w.fake.StartJob(jobID, name) {
		w.t.Fatalf("the fake has no runner %s for job %d", name, jobID)
	}
	w.deliver(events.ActionInProgress, jobID, name)
}

// lifecycle runs one job from queued to deleted the way GitHub would.
func (w *world) lifecycle(jobID int64) {
	w.t.Helper()
	name := instanceName(jobID)
	w.deliver(events.ActionQueued, jobID, "")
	w.waitStatus(name, runner.StatusRunning)
	w.startJob(jobID)
	w.fake.FinishRunner(name) // the job ends; the JIT runner removes itself
	w.deliver(events.ActionCompleted, jobID, name)
	w.waitStatus(name, runner.StatusDeleted)
}

// callsAt lists the fake's answered calls of one route.
func (w *world) callsAt(route string) []githubtest.Call {
	var out []githubtest.Call
	for _, c := range w.fake.Calls() {
		if c.Route == route {
			out = append(out, c)
		}
	}
	return out
}
