package engine_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// layouts are the two ways the engine meets its store and queue, for tests
// that must hold for both: the queue in the store's file (store.Outbox, as
// serve runs) and a queue of its own (as on DynamoDB and SQS).
var layouts = map[string]enginetest.Options{"outbox": {}, "separate queue": {SeparateQueue: true}}

func TestJobLifecycleQueuedToDeleted(t *testing.T) {
	for layout, o := range layouts {
		t.Run(layout, func(t *testing.T) { testJobLifecycleQueuedToDeleted(t, o) })
	}
}

func testJobLifecycleQueuedToDeleted(t *testing.T, o enginetest.Options) {
	w := enginetest.NewWorld(t, o)
	w.StartWorkers(2)
	name := enginetest.InstanceName(1001)

	out := w.Deliver(enginetest.Event(runner.ActionQueued, 1001, ""))
	if out.Result != engine.ResultCreated || out.Instance != name || out.Pool != enginetest.Pool {
		t.Fatalf("queued outcome = %+v", out)
	}
	inst := w.WaitStatus(name, runner.StatusRunning)
	if inst.ProviderID == "" || inst.GitHubRunnerID == 0 {
		t.Fatalf("running instance lacks provider or runner id: %+v", inst)
	}
	if got := len(w.GitHub.Runners()); got != 1 {
		t.Fatalf("GitHub runners = %d, want 1", got)
	}
	if job := w.Job(1001); job.Status != runner.JobOpen || job.Instance != name || job.Made != 1 {
		t.Fatalf("job ledger after queued: %+v", job)
	}

	w.Deliver(enginetest.Event(runner.ActionInProgress, 1001, name))
	inst = w.Instance(name)
	if inst.RunnerStatus != runner.RunnerActive || inst.ActiveJobID != 1001 {
		t.Fatalf("in_progress did not bind the runner: %+v", inst)
	}
	if job := w.Job(1001); job.Status != runner.JobServed {
		t.Fatalf("job ledger after in_progress: %+v", job)
	}

	if out := w.Deliver(enginetest.Event(runner.ActionCompleted, 1001, name)); out.Result != engine.ResultDeleteScheduled {
		t.Fatalf("completed outcome = %+v", out)
	}
	inst = w.WaitStatus(name, runner.StatusDeleted)
	if inst.ExpiresAt.IsZero() {
		t.Fatal("deleted instance has no expiry")
	}
	if n := len(w.Provider.Machines()); n != 0 {
		t.Fatalf("provider still has %d machines", n)
	}
	if n := len(w.GitHub.Runners()); n != 0 {
		t.Fatalf("GitHub still has %d runners", n)
	}
	if used, _ := w.Store.PoolUsage(context.Background(), enginetest.Pool); used != 0 {
		t.Fatalf("pool usage after delete = %d", used)
	}
	if job := w.Job(1001); job.Status != runner.JobClosed {
		t.Fatalf("job ledger after completed: %+v", job)
	}
	// Every engine log line names the job and instance it is about.
	for _, l := range w.Logs.Lines(t, nil) {
		if l["level"] != "DEBUG" && (l["instance"] == nil || l["pool"] == nil || l["job_id"] == nil) {
			t.Errorf("log line without instance/pool/job_id: %v", l)
		}
	}
}

func TestUnmatchedAndWaitingJobsChangeNothing(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	ev := enginetest.Event(runner.ActionQueued, 2001, "")
	ev.Labels = []string{"self-hosted", "gpu"}
	if out := w.Deliver(ev); out.Result != engine.ResultNoMatchingPool {
		t.Fatalf("outcome = %+v", out)
	}
	if out := w.Deliver(enginetest.Event(runner.ActionWaiting, 2002, "")); out.Result != engine.ResultRecorded {
		t.Fatalf("outcome = %+v", out)
	}
	if live := w.Live(); len(live) != 0 {
		t.Fatalf("live instances = %v", live)
	}
}

func TestForeignRunnerEventsAreIgnored(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	for _, action := range []runner.JobAction{runner.ActionInProgress, runner.ActionCompleted} {
		out := w.Deliver(enginetest.Event(action, 3001, "someone-elses-runner"))
		if out.Result != engine.ResultIgnored {
			t.Fatalf("%s outcome = %+v", action, out)
		}
	}
}

func TestOperatorDeleteOfUnknownInstance(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	for _, mode := range []engine.DeleteMode{engine.Graceful, engine.Forced} {
		_, err := w.Engine.OperatorDelete(context.Background(), "runfleet-nope-1-1", mode)
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("mode %v: err = %v, want ErrNotFound", mode, err)
		}
	}
}

func TestMalformedMessagesNeverBlockOthers(t *testing.T) {
	// P14 for the embedded worker: a poisoned message is acknowledged with
	// an error log; the good one behind it completes.
	w := enginetest.NewWorld(t, enginetest.Options{})
	ctx := context.Background()
	for _, body := range []string{`{not json`, `{"v":99,"kind":"create","instance":"x"}`, `{"v":1,"kind":"explode","instance":"x"}`} {
		if err := w.Queue.Send(ctx, []byte(body), 0); err != nil {
			t.Fatal(err)
		}
		if err := w.Engine.HandleMessage(ctx, []byte(body)); !errors.Is(err, engine.ErrMalformed) {
			t.Fatalf("HandleMessage(%s) = %v, want ErrMalformed", body, err)
		}
	}
	w.Deliver(enginetest.Event(runner.ActionQueued, 4001, ""))
	w.StartWorkers(1)
	w.WaitStatus(enginetest.InstanceName(4001), runner.StatusRunning)
	w.WaitFor("queue to empty", func() bool {
		msgs, _ := w.Queue.Receive(ctx, queue.ReceiveOptions{Max: 10, Visibility: 5 * time.Second})
		return len(msgs) == 0
	})
	if dl, _ := w.Queue.DeadLetters(ctx); len(dl) != 0 {
		t.Fatalf("malformed messages should be acknowledged, found %d dead letters", len(dl))
	}
}
