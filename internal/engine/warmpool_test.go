package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
)

func idleRunners(w *enginetest.World) []*runner.Instance {
	var idle []*runner.Instance
	for _, inst := range w.Live() {
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
	clock := &testclock.Clock{}
	w := enginetest.NewWorld(t, enginetest.Options{
		Now: clock.Now,
		Pools: enginetest.OnePool(func(p *runner.Pool) {
			p.MinIdle, p.MaxRunners, p.BootstrapTimeout = 2, 5, time.Minute
		}),
	})
	ctx := context.Background()
	w.StartWorkers(2)

	rep, err := w.Engine.Reconcile(ctx)
	if err != nil || rep.WarmCreated != 2 {
		t.Fatalf("first pass: %+v, %v; want 2 warm runners", rep, err)
	}
	w.WaitFor("two warm runners running", func() bool { return len(idleRunners(w)) == 2 })
	if rep, _ := w.Engine.Reconcile(ctx); rep.WarmCreated != 0 {
		t.Fatalf("second pass created %d more; the pool is already at min_idle", rep.WarmCreated)
	}
	warm := idleRunners(w)[0].Name
	if !strings.Contains(warm, "-warm-") {
		t.Fatalf("warm runner name %q", warm)
	}

	// A job arrives and its own instance comes up; GitHub gives the job to a
	// warm runner all the same.
	w.RunJob(150_001)
	w.Deliver(enginetest.Event(runner.ActionInProgress, 150_001, warm))
	w.Deliver(enginetest.Event(runner.ActionCompleted, 150_001, warm))
	w.WaitStatus(warm, runner.StatusDeleted)
	if rep, _ := w.Engine.Reconcile(ctx); rep.WarmCreated != 0 {
		t.Fatalf("the job's own idle instance should count as warm; created %d", rep.WarmCreated)
	}

	// Past the bootstrap timeout, with every runner online and idle: the
	// pool keeps exactly min_idle of them.
	clock.Advance(2 * time.Minute)
	for _, inst := range idleRunners(w) {
		w.GitHub.SetOnline(inst.Name, true)
	}
	w.Deliver(enginetest.Event(runner.ActionQueued, 150_002, ""))
	w.WaitStatus(enginetest.InstanceName(150_002), runner.StatusRunning)
	w.GitHub.SetOnline(enginetest.InstanceName(150_002), true)
	clock.Advance(2 * time.Minute)
	rep, err = w.Engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.UnneededScheduled != 1 {
		t.Fatalf("unneeded = %d, want the one idle runner beyond min_idle", rep.UnneededScheduled)
	}
	w.WaitFor("min_idle idle runners left", func() bool { return len(idleRunners(w)) == 2 })
}
