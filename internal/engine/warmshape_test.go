package engine_test

import (
	"context"
	"slices"
	"testing"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
)

// A pool with shapes keeps its warm runners in the shapes its jobs ask
// for, in proportion: two jobs running on 8-vCPU machines and one on the
// pool's own make a min_idle of 3 two 8-vCPU warm runners and one plain.
func TestWarmRunnersComeInTheShapesJobsAskFor(t *testing.T) {
	// min_idle 3; no reconcile pass runs before the jobs come.
	w := enginetest.NewWorld(t, enginetest.Options{
		Pools: enginetest.OnePool(func(p *runner.Pool) {
			p.MinIdle = 3
			p.Shapes = &runner.ShapePolicy{Families: []string{"c7g", "m7g"}, MaxCPU: 16, MaxMemoryGiB: 64}
		}),
	})
	ctx := context.Background()
	w.StartWorkers(2)
	shaped := []string{"runfleet/cpu=8"}
	for id, shape := range map[int64][]string{160_001: shaped, 160_002: shaped, 160_003: nil} {
		w.Deliver(shapedEvent(runner.ActionQueued, id, shape...))
		name := enginetest.InstanceName(id)
		w.WaitStatus(name, runner.StatusRunning)
		started := shapedEvent(runner.ActionInProgress, id, shape...)
		started.RunnerName = name
		w.Deliver(started)
	}

	rep, err := w.Engine.Reconcile(ctx)
	if err != nil || rep.WarmCreated != 3 {
		t.Fatalf("reconcile: %+v, %v; want 3 warm runners", rep, err)
	}
	var got []string
	for _, inst := range w.Live() {
		if inst.JobID == 0 {
			got = append(got, runner.ShapeLabels(inst.Labels)...)
			if len(runner.ShapeLabels(inst.Labels)) == 0 {
				got = append(got, "(the pool's own)")
			}
		}
	}
	slices.Sort(got)
	want := []string{"(the pool's own)", "runfleet/cpu=8", "runfleet/cpu=8"}
	if !slices.Equal(got, want) {
		t.Fatalf("warm runners' shapes %v, want %v", got, want)
	}
	if rep, _ := w.Engine.Reconcile(ctx); rep.WarmCreated != 0 {
		t.Fatalf("second pass created %d more; the pool is at its warm size in every shape", rep.WarmCreated)
	}
}
