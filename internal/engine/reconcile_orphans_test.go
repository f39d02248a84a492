package engine_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/runfleet/runfleet/events"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
)

// A provider that ignored a delete by name, or a crash between a machine and
// its record, leaves a machine no live instance owns: the reconciler finds it
// by listing and deletes it; machines of live instances are untouched.
func TestReconcilerDeletesOrphanedMachines(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	h.startWorkers(2)
	h.deliver(job(events.ActionQueued, 110_001, ""))
	keep := nameFor(110_001)
	h.waitStatus(keep, runner.StatusRunning)
	h.stopWorkers()
	for _, name := range []string{"runfleet-linux-x64-110002-1", "someone-elses-vm"} {
		if _, err := h.provider.CreateInstance(ctx, providers.CreateRequest{Name: name, Pool: testPool}); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := h.engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OrphanMachinesDeleted != 1 {
		t.Fatalf("orphan machines deleted = %d, want 1", rep.OrphanMachinesDeleted)
	}
	var names []string
	for _, m := range h.provider.Machines() {
		names = append(names, m.Name)
	}
	if len(names) != 2 || !slices.Contains(names, keep) || !slices.Contains(names, "someone-elses-vm") {
		t.Fatalf("machines after reconcile = %v; want the live instance's and the foreign one", names)
	}
}

// A JIT runner registered by this controller with no live record is removed;
// busy runners and other controllers' runners are never touched (P10).
func TestReconcilerRemovesLeakedRunnersOnlyIfOurs(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	owner := github.Owner{Org: "octo-org"}
	own := engine.ControllerLabel(testController)
	register := func(name string, labels ...string) {
		if _, err := h.github.GenerateJITConfig(ctx, github.JITRequest{Owner: owner, Name: name, Labels: labels}); err != nil {
			t.Fatal(err)
		}
	}
	register("runfleet-linux-x64-120001-1", "self-hosted", own)                         // leaked: ours, no record
	register("runfleet-linux-x64-120002-1", "self-hosted", own)                         // ours but busy
	register("runfleet-linux-x64-120003-1", "self-hosted", "runfleet-controller-other") // another controller's
	h.github.SetBusy("runfleet-linux-x64-120002-1", true)

	rep, err := h.engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OrphanRunnersRemoved != 1 {
		t.Fatalf("orphan runners removed = %d, want 1", rep.OrphanRunnersRemoved)
	}
	var left []string
	for _, r := range h.github.Runners() {
		left = append(left, r.Name)
	}
	if slices.Contains(left, "runfleet-linux-x64-120001-1") || len(left) != 2 {
		t.Fatalf("runners left = %v", left)
	}
}

// P11: a runner that never came online (the completed webhook will never
// come) is deleted once its pool's bootstrap timeout has passed; a runner
// running a job is not.
func TestP11RunnerThatNeverCameOnlineIsDeleted(t *testing.T) {
	clock := &movableClock{}
	h := newHarness(t, harnessOptions{now: clock.now, bootstrapTimeout: time.Minute})
	ctx := context.Background()
	h.startWorkers(2)
	h.deliver(job(events.ActionQueued, 130_001, ""))
	h.deliver(job(events.ActionQueued, 130_002, ""))
	idle, busy := nameFor(130_001), nameFor(130_002)
	h.waitStatus(idle, runner.StatusRunning)
	h.waitStatus(busy, runner.StatusRunning)
	h.deliver(job(events.ActionInProgress, 130_002, busy))

	if rep, err := h.engine.Reconcile(ctx); err != nil || rep.UnneededScheduled != 0 {
		t.Fatalf("before the timeout: %+v, %v", rep, err)
	}
	clock.advance(2 * time.Minute)
	rep, err := h.engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.UnneededScheduled != 1 {
		t.Fatalf("unneeded scheduled = %d, want 1", rep.UnneededScheduled)
	}
	inst := h.waitStatus(idle, runner.StatusDeleted)
	if inst.ProviderFault == "" {
		t.Fatal("the reason should be recorded on the instance")
	}
	if got := h.instance(busy).Status; got != runner.StatusRunning {
		t.Fatalf("active runner: %s, want running", got)
	}
}
