package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
)

// Stuck (what runfleet_instances_stuck counts) is exactly what the
// reconciler recovers: an instance whose create message is presumed lost
// is stuck once past its bound, not before, and the pass then re-sends it.
func TestStuckIsWhatTheReconcilerRecovers(t *testing.T) {
	clock := &testclock.Clock{}
	w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now})
	name := enginetest.InstanceName(3003)
	w.Deliver(enginetest.Event(runner.ActionQueued, 3003, "")) // no workers: it stays pending_create
	inst := w.Instance(name)
	if inst.Status != runner.StatusPendingCreate {
		t.Fatalf("instance %s, want pending_create", inst.Status)
	}
	if w.Engine.Stuck(inst, clock.Now()) {
		t.Fatal("a pending_create instance is stuck the moment it is admitted")
	}
	if rep, err := w.Engine.Reconcile(context.Background()); err != nil || rep.CreatesResent != 0 {
		t.Fatalf("pass before the bound: %+v, %v; want nothing re-sent", rep, err)
	}
	clock.Advance(2 * time.Minute)
	if !w.Engine.Stuck(inst, clock.Now()) {
		t.Fatal("a pending_create instance two minutes past due is not stuck")
	}
	if rep, err := w.Engine.Reconcile(context.Background()); err != nil || rep.CreatesResent != 1 {
		t.Fatalf("pass past the bound: %+v, %v; want its create re-sent", rep, err)
	}
	for _, s := range []runner.Status{runner.StatusRunning, runner.StatusStopped} {
		old := inst.Clone()
		old.Status, old.StatusChangedAt = s, clock.Now().Add(-24*time.Hour)
		if w.Engine.Stuck(old, clock.Now()) {
			t.Errorf("a %s instance is stuck: a runner's age is the job ledger's concern", s)
		}
	}
}
