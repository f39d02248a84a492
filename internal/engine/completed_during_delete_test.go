package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
)

// duringRemove is the simulated GitHub with a hook run inside the next
// RemoveRunner call, before GitHub answers it: what arrives while a delete
// attempt is in flight.
type duringRemove struct {
	*ghsim.GitHub
	hook func()
}

func (g *duringRemove) RemoveRunner(ctx context.Context, ref github.RunnerRef) error {
	if hook := g.hook; hook != nil {
		g.hook = nil
		hook()
	}
	return g.GitHub.RemoveRunner(ctx, ref)
}

// Issue #32: the job's completed arrives while a delete attempt is in
// flight, and GitHub, a moment behind its own webhook, answers that attempt
// 422 (runner busy). The finished job's machine is deleted within 30 s of
// the completed on runfleet's clock — not after delete_backoff_max (5 min
// by default), the wait meant for a runner still running its job.
func TestCompletedDuringDeleteMakesTheBusyRetrySoon(t *testing.T) {
	clock := testclock.At(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))
	gh := &duringRemove{GitHub: ghsim.New()}
	w := enginetest.NewWorld(t, enginetest.Options{
		Now:              clock.Now,
		DeleteBackoffMax: 5 * time.Minute,
		GitHub:           func(*slog.Logger) github.GitHub { return gh },
	})
	const id = 32_001
	w.Deliver(enginetest.Event(runner.ActionQueued, id, ""))
	w.Drain()
	name := enginetest.InstanceName(id)
	w.Deliver(enginetest.Event(runner.ActionInProgress, id, name))
	if got := w.Instance(name); got.Status != runner.StatusRunning || got.ActiveJobID != id {
		t.Fatalf("before the delete: %s running job %d, want running job %d", got.Status, got.ActiveJobID, id)
	}

	// A delete decided for another reason (an operator's, whose own
	// RemoveRunner fails, leaving it to the worker) starts while GitHub
	// calls the runner idle; during the worker's RemoveRunner the job
	// completes, and GitHub still calls the runner busy when it answers.
	gh.FailNext(ghsim.OpRemoveRunner, errors.New("simulated 502"))
	if _, err := w.Engine.OperatorDelete(context.Background(), name, engine.DeleteMode(false)); err != nil {
		t.Fatal(err)
	}
	var completedAt time.Time
	gh.hook = func() {
		completedAt = clock.Now()
		w.Deliver(enginetest.Event(runner.ActionCompleted, id, name))
		gh.SetBusy(name, true)
	}
	w.Drain()
	if completedAt.IsZero() {
		t.Fatal("the delete attempt never asked GitHub to remove the runner")
	}
	inst := w.Instance(name)
	if inst.Status != runner.StatusPendingDelete {
		t.Fatalf("after the 422: %s, want pending_delete", inst.Status)
	}
	if wait := inst.NextAttemptAt.Sub(completedAt); wait > 30*time.Second {
		t.Fatalf("the next delete attempt is due %s after the completed; want within 30s", wait)
	}

	// GitHub catches up; the attempt, when due, deletes the machine.
	gh.SetBusy(name, false)
	clock.AdvanceTo(inst.NextAttemptAt)
	w.Drain()
	if got := w.Instance(name); got.Status != runner.StatusDeleted {
		t.Fatalf("at the next attempt: %s, want deleted", got.Status)
	}
	if took := clock.Now().Sub(completedAt); took > 30*time.Second {
		t.Fatalf("the finished job's machine was deleted %s after its completed; want within 30s", took)
	}
	if n := len(w.Provider.Machines()); n != 0 {
		t.Fatalf("%d machines left, want 0", n)
	}
}
