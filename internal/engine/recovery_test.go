package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/providers"
)

// putInState writes an instance and walks it, through legal transitions, to
// status want — the state a crashed controller would have left it in.
func putInState(t *testing.T, w *enginetest.World, id int64, want runner.Status) *runner.Instance {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	inst := &runner.Instance{
		Name: enginetest.InstanceName(id), Pool: enginetest.Pool, Status: runner.StatusPendingCreate, RunnerStatus: runner.RunnerPending,
		JobID: id, RunAttempt: 1, Owner: runner.Owner{Org: enginetest.Owner}, Labels: enginetest.Labels(),
		CreatedAt: now, UpdatedAt: now, StatusChangedAt: now,
	}
	if err := w.Store.CreateInstance(ctx, store.Admission{Instance: inst, MaxRunners: 100}); err != nil {
		t.Fatal(err)
	}
	paths := map[runner.Status][]runner.Status{
		runner.StatusPendingCreate:      {},
		runner.StatusCreating:           {runner.StatusCreating},
		runner.StatusRunning:            {runner.StatusCreating, runner.StatusRunning},
		runner.StatusStopped:            {runner.StatusCreating, runner.StatusRunning, runner.StatusStopped},
		runner.StatusUnknown:            {runner.StatusCreating, runner.StatusRunning, runner.StatusUnknown},
		runner.StatusError:              {runner.StatusCreating, runner.StatusError},
		runner.StatusPendingDelete:      {runner.StatusCreating, runner.StatusRunning, runner.StatusPendingDelete},
		runner.StatusPendingForceDelete: {runner.StatusCreating, runner.StatusRunning, runner.StatusPendingForceDelete},
		runner.StatusDeleting:           {runner.StatusCreating, runner.StatusRunning, runner.StatusPendingDelete, runner.StatusDeleting},
	}
	path, ok := paths[want]
	if !ok {
		t.Fatalf("no path to %s", want)
	}
	for _, to := range path {
		next, err := inst.Transition(to, now)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Store.UpdateInstance(ctx, inst.Status, next); err != nil {
			t.Fatal(err)
		}
		inst = next
	}
	return inst
}

// P12: from every intermediate state — as a crash would leave it — an
// operator delete (and the delete path) is legal and completes.
func TestP12DeleteIsReachableFromEveryIntermediateState(t *testing.T) {
	states := []runner.Status{
		runner.StatusPendingCreate, runner.StatusCreating, runner.StatusRunning, runner.StatusStopped,
		runner.StatusUnknown, runner.StatusError, runner.StatusPendingDelete, runner.StatusPendingForceDelete,
		runner.StatusDeleting,
	}
	for _, mode := range []engine.DeleteMode{engine.Graceful, engine.Forced} {
		t.Run(fmt.Sprintf("forced=%v", mode == engine.Forced), func(t *testing.T) {
			w := enginetest.NewWorld(t, enginetest.Options{})
			for i, s := range states {
				inst := putInState(t, w, int64(80_000+i), s)
				if _, err := w.Engine.OperatorDelete(context.Background(), inst.Name, mode); err != nil {
					t.Fatalf("from %s: %v", s, err)
				}
			}
			w.StartWorkers(4)
			for i, s := range states {
				name := enginetest.InstanceName(int64(80_000 + i))
				w.WaitFor(fmt.Sprintf("%s (from %s) to be deleted", name, s), func() bool {
					return w.Instance(name).Status == runner.StatusDeleted
				})
			}
		})
	}
}

// P12/P6 by the reconciler alone: a worker that died in creating or deleting
// (with the machine already made) is recovered once its timeout has passed.
func TestReconcilerRecoversCrashedWorkers(t *testing.T) {
	clock := &testclock.Clock{}
	w := enginetest.NewWorld(t, enginetest.Options{
		Now: clock.Now, ProviderTimeout: time.Minute,
		Pools: enginetest.OnePool(func(p *runner.Pool) { p.BootstrapTimeout = time.Minute }),
	})
	ctx := context.Background()

	// Killed after the provider created the machine, before the status write.
	creating := putInState(t, w, 90_001, runner.StatusCreating)
	req := providers.CreateRequest{Name: creating.Name, Pool: enginetest.Pool, PoolID: w.PoolID(enginetest.Pool)}
	if _, err := w.Provider.CreateInstance(ctx, req); err != nil {
		t.Fatal(err)
	}
	// Killed mid-delete.
	deleting := putInState(t, w, 90_002, runner.StatusDeleting)
	// Killed between error and pending_delete.
	failed := putInState(t, w, 90_003, runner.StatusError)
	// Lost queue messages.
	pendingCreate := putInState(t, w, 90_004, runner.StatusPendingCreate)
	pendingDelete := putInState(t, w, 90_005, runner.StatusPendingDelete)

	rep, err := w.Engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.StuckCreating+rep.StuckDeleting+rep.CreatesResent+rep.DeletesResent+rep.ErrorsScheduled != 0 {
		t.Fatalf("nothing is overdue yet, but the reconciler acted: %+v", rep)
	}

	clock.Advance(10 * time.Minute)
	rep, err = w.Engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := reconcileCounts{StuckCreating: 1, StuckDeleting: 1, ErrorsScheduled: 1, CreatesResent: 1, DeletesResent: 1}
	if got := (reconcileCounts{rep.StuckCreating, rep.StuckDeleting, rep.ErrorsScheduled, rep.CreatesResent, rep.DeletesResent}); got != want {
		t.Fatalf("reconcile report = %+v, want %+v", got, want)
	}
	w.StartWorkers(4)
	// The half-made machine was deleted before the create was retried: the
	// instance runs on exactly one machine.
	w.WaitStatus(creating.Name, runner.StatusRunning)
	if got := w.Provider.DeleteCalls(creating.Name); got < 1 {
		t.Fatalf("stuck creating: machine never deleted before retry (deletes = %d)", got)
	}
	count := 0
	for _, m := range w.Provider.Machines() {
		if m.Name == creating.Name {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("machines named %s = %d, want 1", creating.Name, count)
	}
	w.WaitStatus(deleting.Name, runner.StatusDeleted)
	w.WaitStatus(failed.Name, runner.StatusDeleted)
	w.WaitStatus(pendingCreate.Name, runner.StatusRunning)
	w.WaitStatus(pendingDelete.Name, runner.StatusDeleted)
}

type reconcileCounts struct{ StuckCreating, StuckDeleting, ErrorsScheduled, CreatesResent, DeletesResent int }

// P13: after a failed create the provider is asked to delete by name before
// anything else happens; the retry never makes a second machine of that name.
func TestP13FailedCreateIsDeletedByNameBeforeRetry(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	// A cloud that errors yet leaves a VM.
	w.Recorder.FailCreates(1, true)
	w.StartWorkers(2)
	name := w.RunJob(95_001)
	want := []string{"create " + name, "delete " + name, "create " + name}
	if got := w.Recorder.Calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("provider calls = %v, want %v", got, want)
	}
	if n := len(w.Provider.Machines()); n != 1 {
		t.Fatalf("machines = %d, want 1", n)
	}
	// The JIT runner of the failed attempt was removed; only the retry's is left (P10).
	if n := len(w.GitHub.Runners()); n != 1 {
		t.Fatalf("GitHub runners = %d, want 1", n)
	}
}

// Restarting mid-flight loses nothing: work accepted before the stop — not
// yet received, or received but not acknowledged — resumes from the store
// and the queue.
func TestRestartMidFlightLosesNothing(t *testing.T) {
	for layout, o := range layouts {
		t.Run(layout, func(t *testing.T) { testRestartMidFlightLosesNothing(t, o) })
	}
}

func testRestartMidFlightLosesNothing(t *testing.T, o enginetest.Options) {
	w := enginetest.NewWorld(t, o)
	ctx := context.Background()
	first, second := enginetest.InstanceName(96_001), enginetest.InstanceName(96_002)
	w.Deliver(enginetest.Event(runner.ActionQueued, 96_001, "")) // accepted, never received
	w.Deliver(enginetest.Event(runner.ActionQueued, 96_002, ""))
	// A worker takes one message and dies before acknowledging it.
	msgs, err := w.Queue.Receive(ctx, queue.ReceiveOptions{Max: 1, Visibility: 5 * time.Second, Wait: time.Second})
	if err != nil || len(msgs) == 0 {
		t.Fatalf("receive: %v, %d messages", err, len(msgs))
	}
	w.Restart()
	w.StartWorkers(2)
	w.WaitStatus(first, runner.StatusRunning)
	w.WaitStatus(second, runner.StatusRunning)

	// And a delete accepted just before a stop completes after it.
	w.StopWorkers()
	w.Deliver(enginetest.Event(runner.ActionCompleted, 96_001, first))
	w.Restart()
	w.StartWorkers(2)
	w.WaitStatus(first, runner.StatusDeleted)
	if n := w.Provider.CreateCalls(first); n != 1 {
		t.Fatalf("creates = %d, want 1", n)
	}
}
