package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/runfleet/runfleet/events"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

func TestJobLifecycleQueuedToDeleted(t *testing.T) {
	for layout, o := range layouts {
		t.Run(layout, func(t *testing.T) { testJobLifecycleQueuedToDeleted(t, o) })
	}
}

func testJobLifecycleQueuedToDeleted(t *testing.T, o harnessOptions) {
	h := newHarness(t, o)
	h.startWorkers(2)
	name := nameFor(1001)

	out := h.deliver(job(events.ActionQueued, 1001, ""))
	if out.Result != engine.ResultCreated || out.Instance != name || out.Pool != testPool {
		t.Fatalf("queued outcome = %+v", out)
	}
	inst := h.waitStatus(name, runner.StatusRunning)
	if inst.ProviderID == "" || inst.GitHubRunnerID == 0 {
		t.Fatalf("running instance lacks provider or runner id: %+v", inst)
	}
	if got := len(h.github.Runners()); got != 1 {
		t.Fatalf("GitHub runners = %d, want 1", got)
	}

	h.deliver(job(events.ActionInProgress, 1001, name))
	inst = h.instance(name)
	if inst.RunnerStatus != runner.RunnerActive || inst.ActiveJobID != 1001 {
		t.Fatalf("in_progress did not bind the runner: %+v", inst)
	}

	if out := h.deliver(job(events.ActionCompleted, 1001, name)); out.Result != engine.ResultDeleteScheduled {
		t.Fatalf("completed outcome = %+v", out)
	}
	inst = h.waitStatus(name, runner.StatusDeleted)
	if inst.ExpiresAt.IsZero() {
		t.Fatal("deleted instance has no expiry")
	}
	if n := len(h.provider.Machines()); n != 0 {
		t.Fatalf("provider still has %d machines", n)
	}
	if n := len(h.github.Runners()); n != 0 {
		t.Fatalf("GitHub still has %d runners", n)
	}
	if used, _ := h.store.PoolUsage(context.Background(), testPool); used != 0 {
		t.Fatalf("pool usage after delete = %d", used)
	}
	// Every engine log line names the job and instance it is about.
	for _, l := range h.logs.Lines(t, nil) {
		if l["level"] != "DEBUG" && (l["instance"] == nil || l["pool"] == nil || l["job_id"] == nil) {
			t.Errorf("log line without instance/pool/job_id: %v", l)
		}
	}
}

func TestUnmatchedAndWaitingJobsChangeNothing(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ev := job(events.ActionQueued, 2001, "")
	ev.WorkflowJob.Labels = []string{"self-hosted", "gpu"}
	if out := h.deliver(ev); out.Result != engine.ResultNoMatchingPool {
		t.Fatalf("outcome = %+v", out)
	}
	if out := h.deliver(job(events.ActionWaiting, 2002, "")); out.Result != engine.ResultRecorded {
		t.Fatalf("outcome = %+v", out)
	}
	live, err := h.store.ListLiveInstances(context.Background())
	if err != nil || len(live) != 0 {
		t.Fatalf("live instances = %v, %v", live, err)
	}
}

func TestForeignRunnerEventsAreIgnored(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	for _, action := range []string{events.ActionInProgress, events.ActionCompleted} {
		out := h.deliver(job(action, 3001, "someone-elses-runner"))
		if out.Result != engine.ResultIgnored {
			t.Fatalf("%s outcome = %+v", action, out)
		}
	}
}

func TestForceDeleteUnknownInstance(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	_, err := h.engine.ForceDelete(context.Background(), "runfleet-nope-1-1", true)
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

func TestMalformedMessagesNeverBlockOthers(t *testing.T) {
	// P14 for the embedded worker: a poisoned message is acknowledged with
	// an error log; the good one behind it completes.
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	for _, body := range []string{`{not json`, `{"v":99,"kind":"create","instance":"x"}`, `{"v":1,"kind":"explode","instance":"x"}`} {
		if err := h.queue.Send(ctx, []byte(body), 0); err != nil {
			t.Fatal(err)
		}
		if err := h.engine.HandleMessage(ctx, []byte(body)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("HandleMessage(%s) = %v, want ErrMalformed", body, err)
		}
	}
	h.deliver(job(events.ActionQueued, 4001, ""))
	h.startWorkers(1)
	h.waitStatus(nameFor(4001), runner.StatusRunning)
	h.waitFor("queue to empty", func() bool {
		msgs, _ := h.queue.Receive(ctx, queueOpts(0))
		return len(msgs) == 0
	})
	if dl, _ := h.queue.DeadLetters(ctx); len(dl) != 0 {
		t.Fatalf("malformed messages should be acknowledged, found %d dead letters", len(dl))
	}
}
