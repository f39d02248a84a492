package engine_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/providers/simulated"
)

// heard keeps what an Observer was told.
type heard struct {
	mu       sync.Mutex
	waited   map[engine.QueueStage][]time.Duration
	changes  []string // "name from->to"
	retried  []string
	passes   []engine.ReconcileReport
	poolSeen map[string]bool
	takeover []string // "name status reason age"
}

func newHeard() *heard {
	return &heard{waited: map[engine.QueueStage][]time.Duration{}, poolSeen: map[string]bool{}}
}

func (h *heard) JobWaited(pool string, stage engine.QueueStage, waited time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waited[stage] = append(h.waited[stage], waited)
	h.poolSeen[pool] = true
}

func (h *heard) InstanceChanged(inst *runner.Instance, from runner.Status) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.changes = append(h.changes, fmt.Sprintf("%s %s->%s", inst.Name, from, inst.Status))
}

func (h *heard) DeleteRetried(pool string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.retried = append(h.retried, pool)
}

func (h *heard) WorkTakenOver(inst *runner.Instance, reason string, age time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.takeover = append(h.takeover, fmt.Sprintf("%s %s %s %s", inst.Name, inst.Status, reason, age))
}

func (h *heard) takenOver() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.takeover)
}

func (h *heard) ReconcilePassed(rep engine.ReconcileReport, _ time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.passes = append(h.passes, rep)
}

func (h *heard) snapshot() (map[engine.QueueStage][]time.Duration, []string, []string, []engine.ReconcileReport) {
	h.mu.Lock()
	defer h.mu.Unlock()
	w := map[engine.QueueStage][]time.Duration{}
	for k, v := range h.waited {
		w[k] = slices.Clone(v)
	}
	return w, slices.Clone(h.changes), slices.Clone(h.retried), slices.Clone(h.passes)
}

// The engine tells its observer each stage of a job's wait once, measured
// from the job's queued time: created when the provider's create returned,
// online when the runner reported idle, started at in_progress — and every
// committed status change, and each reconcile pass.
func TestObserverHearsEachStageOfAJobsWait(t *testing.T) {
	h := newHeard()
	clock := &testclock.Clock{}
	w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now, Engine: func(o *engine.Options) { o.Observer = h }})
	name := enginetest.InstanceName(3001)

	w.Deliver(enginetest.Event(runner.ActionQueued, 3001, ""))
	clock.Advance(5 * time.Second)
	w.StartWorkers(1)
	inst := w.WaitStatus(name, runner.StatusRunning)
	// Observed just after the running write the wait above saw.
	enginetest.Eventually(t, "the created stage to be heard", func() bool {
		waited, _, _, _ := h.snapshot()
		return len(waited[engine.StageCreated]) == 1
	})

	clock.Advance(3 * time.Second)
	claim := engine.BootstrapClaim{Instance: name, Pool: inst.Pool, Attempt: inst.CreateAttempt}
	if _, err := w.Engine.ReportRunnerStatus(context.Background(), claim, engine.RunnerReport{Status: engine.ReportIdle}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	w.Deliver(enginetest.Event(runner.ActionInProgress, 3001, name))
	// A redelivered in_progress is not a second start.
	w.Deliver(enginetest.Event(runner.ActionInProgress, 3001, name))
	if _, err := w.Engine.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}

	waited, changes, _, passes := h.snapshot()
	for stage, least := range map[engine.QueueStage]time.Duration{
		engine.StageCreated: 5 * time.Second, engine.StageOnline: 8 * time.Second, engine.StageStarted: 10 * time.Second,
	} {
		if got := waited[stage]; len(got) != 1 || got[0] < least {
			t.Errorf("%s: heard %v, want one wait of at least %s", stage, got, least)
		}
	}
	if !h.poolSeen[enginetest.Pool] || len(h.poolSeen) != 1 {
		t.Errorf("pools heard %v, want only %s", h.poolSeen, enginetest.Pool)
	}
	want := []string{name + " pending_create->creating", name + " creating->running"}
	if !slices.Equal(changes, want) {
		t.Errorf("status changes heard %v, want %v (runner-status writes are not status changes)", changes, want)
	}
	if len(passes) != 1 || passes[0].Examined != 1 {
		t.Errorf("reconcile passes heard %+v, want one that examined the instance", passes)
	}
}

// A failed delete rescheduled with backoff is heard as a delete retry of
// its pool.
func TestObserverHearsDeleteRetries(t *testing.T) {
	h := newHeard()
	w := enginetest.NewWorld(t, enginetest.Options{
		Faults: simulated.Faults{AlwaysFailDelete: true},
		Engine: func(o *engine.Options) { o.Observer = h },
	})
	w.StartWorkers(1)
	name := enginetest.InstanceName(3002)
	w.Deliver(enginetest.Event(runner.ActionQueued, 3002, ""))
	w.WaitStatus(name, runner.StatusRunning)
	w.Deliver(enginetest.Event(runner.ActionCompleted, 3002, name))
	enginetest.Eventually(t, "a delete retry to be heard", func() bool {
		_, _, retried, _ := h.snapshot()
		return len(retried) > 0
	})
	_, changes, retried, _ := h.snapshot()
	for _, pool := range retried {
		if pool != enginetest.Pool {
			t.Fatalf("delete retry heard for pool %q, want %s", pool, enginetest.Pool)
		}
	}
	if !slices.Contains(changes, name+" deleting->pending_delete") {
		t.Errorf("status changes heard %v, want the failed delete's deleting->pending_delete", changes)
	}
}
