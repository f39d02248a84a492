package engine

import (
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
)

// Stopped machines follow the shapes of the jobs holding the pool's live
// instances, in proportion, each granted as a create grants it; a shape
// the policy refuses keeps none, and idle (jobless) runners and other
// pools' jobs are not asked for anything.
func TestShapedStopped(t *testing.T) {
	pool := &runner.Pool{Name: "p", Shapes: &runner.ShapePolicy{Families: []string{"c7g"}, MaxCPU: 16, MaxMemoryGiB: 64}}
	inst := func(poolName string, job int64, labels ...string) *runner.Instance {
		return &runner.Instance{Pool: poolName, JobID: job, Labels: append([]string{"self-hosted", "linux"}, labels...)}
	}
	live := []*runner.Instance{
		inst("p", 1, "runfleet/cpu=8"), inst("p", 2, "runfleet/cpu=8"), inst("p", 3, "runfleet/cpu=8"),
		inst("p", 4),
		inst("p", 5, "runfleet/cpu=64"), // beyond max_cpu: refused
		inst("p", 0, "runfleet/cpu=2"),  // a warm runner: no job asked
		inst("q", 6, "runfleet/cpu=4"),  // another pool's
	}
	got := shapedStopped(pool, live, 5)
	if len(got) != 2 {
		t.Fatalf("shapedStopped = %+v, want the pool's own and 8 vCPUs", got)
	}
	if got[0].Shape != nil || got[0].Count != 1 {
		t.Errorf("the pool's own: %+v, want 1", got[0])
	}
	if got[1].Shape == nil || got[1].Shape.MinCPU != 8 || got[1].Count != 3 {
		t.Errorf("8 vCPUs: %+v (shape %+v), want 3", got[1], got[1].Shape)
	}
}

// Hot warm runners likewise: the shortfall of each shape below its part,
// never a shape the policy refuses, and nothing while the idle runners
// already make the size.
func TestWarmShapes(t *testing.T) {
	pool := &runner.Pool{Name: "p", Shapes: &runner.ShapePolicy{Families: []string{"c7g"}, MaxCPU: 16, MaxMemoryGiB: 64}}
	inst := func(job int64, labels ...string) *runner.Instance {
		return &runner.Instance{Pool: "p", JobID: job, Labels: append([]string{"self-hosted", "linux"}, labels...)}
	}
	live := []*runner.Instance{inst(1, "runfleet/cpu=8"), inst(2, "runfleet/cpu=8"), inst(3), inst(4, "runfleet/cpu=64")}
	idle := []*runner.Instance{inst(0, "runfleet/cpu=8")}
	got := warmShapes(pool, live, idle, 3)
	// Parts of 3 over {8 vCPUs: 2, own: 1}: 2 and 1; one 8-vCPU runner is idle.
	if len(got) != 2 || got[0] != nil || len(got[1]) != 1 || got[1][0] != "runfleet/cpu=8" {
		t.Fatalf("warmShapes = %q, want one of the pool's own and one of 8 vCPUs", got)
	}
	if got := warmShapes(pool, live, append(idle, inst(0), inst(0)), 3); len(got) != 0 {
		t.Fatalf("warmShapes at the size = %q, want none", got)
	}
	plain := &runner.Pool{Name: "p"}
	if got := warmShapes(plain, live, nil, 2); len(got) != 2 || got[0] != nil || got[1] != nil {
		t.Fatalf("a pool without shapes: %q, want two of its own", got)
	}
}
