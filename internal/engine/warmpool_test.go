package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/events"
	"github.com/runfleet/runfleet/internal/runner"
)

func idleRunners(t *testing.T, h *harness) []*runner.Instance {
	t.Helper()
	live, err := h.store.ListLiveInstances(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var idle []*runner.Instance
	for _, inst := range live {
		if inst.Status == runner.StatusRunning && inst.RunnerStatus != runner.RunnerActive {
			idle = append(idle, inst)
		}
	}
	return idle
}

// min_idle: the reconciler keeps that many idle runners per pool; a job
// that takes one still gets its own instance (exactly one per job), which
// then stands in as the next warm runner; surplus idle runners past the
// bootstrap timeout go, the min_idle youngest stay.
func TestWarmPoolKeepsMinIdleRunners(t *testing.T) {
	clock := &movableClock{}
	h := newHarness(t, harnessOptions{now: clock.now, minIdle: 2, maxRunners: 5, bootstrapTimeout: time.Minute})
	ctx := context.Background()
	h.startWorkers(2)

	rep, err := h.engine.Reconcile(ctx)
	if err != nil || rep.WarmCreated != 2 {
		t.Fatalf("first pass: %+v, %v; want 2 warm runners", rep, err)
	}
	h.waitFor("two warm runners running", func() bool { return len(idleRunners(t, h)) == 2 })
	if rep, _ := h.engine.Reconcile(ctx); rep.WarmCreated != 0 {
		t.Fatalf("second pass created %d more; the pool is already at min_idle", rep.WarmCreated)
	}
	warm := idleRunners(t, h)[0].Name
	if !strings.Contains(warm, "-warm-") {
		t.Fatalf("warm runner name %q", warm)
	}

	// A job arrives; a warm runner takes it before the job's own instance is up.
	h.deliver(job(events.ActionQueued, 150_001, ""))
	own := nameFor(150_001)
	h.waitStatus(own, runner.StatusRunning)
	h.deliver(job(events.ActionInProgress, 150_001, warm))
	h.deliver(job(events.ActionCompleted, 150_001, warm))
	h.waitStatus(warm, runner.StatusDeleted)
	if rep, _ := h.engine.Reconcile(ctx); rep.WarmCreated != 0 {
		t.Fatalf("the job's own idle instance should count as warm; created %d", rep.WarmCreated)
	}

	// Past the bootstrap timeout, with every runner online and idle: the
	// pool keeps exactly min_idle of them.
	clock.advance(2 * time.Minute)
	for _, inst := range idleRunners(t, h) {
		h.github.SetOnline(inst.Name, true)
	}
	h.deliver(job(events.ActionQueued, 150_002, ""))
	h.waitStatus(nameFor(150_002), runner.StatusRunning)
	h.github.SetOnline(nameFor(150_002), true)
	clock.advance(2 * time.Minute)
	rep, err = h.engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.UnneededScheduled != 1 {
		t.Fatalf("unneeded = %d, want the one idle runner beyond min_idle", rep.UnneededScheduled)
	}
	h.waitFor("min_idle idle runners left", func() bool { return len(idleRunners(t, h)) == 2 })
}
