package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/events"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
)

// movableClock lets a test jump past timeouts without sleeping through them.
type movableClock struct{ offset atomic.Int64 }

func (c *movableClock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *movableClock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// putInState writes an instance and walks it, through legal transitions, to
// status want — the state a crashed controller would have left it in.
func putInState(t *testing.T, h *harness, id int64, want runner.Status) *runner.Instance {
	t.Helper()
	ctx := context.Background()
	now := time.Now()
	inst := &runner.Instance{
		Name: nameFor(id), Pool: testPool, Status: runner.StatusPendingCreate, RunnerStatus: runner.RunnerPending,
		JobID: id, RunAttempt: 1, Owner: "octo-org", Labels: []string{"self-hosted", "linux", "x64"},
		CreatedAt: now, UpdatedAt: now, StatusChangedAt: now,
	}
	if err := h.store.CreateInstance(ctx, inst, 100); err != nil {
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
		if err := h.store.UpdateInstance(ctx, inst.Status, next); err != nil {
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
	for _, force := range []bool{false, true} {
		t.Run(fmt.Sprintf("force=%v", force), func(t *testing.T) {
			h := newHarness(t, harnessOptions{})
			for i, s := range states {
				inst := putInState(t, h, int64(80_000+i), s)
				if _, err := h.engine.ForceDelete(context.Background(), inst.Name, force); err != nil {
					t.Fatalf("from %s: %v", s, err)
				}
			}
			h.startWorkers(4)
			for i, s := range states {
				name := nameFor(int64(80_000 + i))
				h.waitFor(fmt.Sprintf("%s (from %s) to be deleted", name, s), func() bool {
					return h.instance(name).Status == runner.StatusDeleted
				})
			}
		})
	}
}

// P12/P6 by the reconciler alone: a worker that died in creating or deleting
// (with the machine already made) is recovered once its timeout has passed.
func TestReconcilerRecoversCrashedWorkers(t *testing.T) {
	clock := &movableClock{}
	h := newHarness(t, harnessOptions{now: clock.now, bootstrapTimeout: time.Minute, providerTimeout: time.Minute})
	ctx := context.Background()

	// Killed after the provider created the machine, before the status write.
	creating := putInState(t, h, 90_001, runner.StatusCreating)
	if _, err := h.provider.CreateInstance(ctx, providers.CreateRequest{Name: creating.Name, Pool: testPool}); err != nil {
		t.Fatal(err)
	}
	// Killed mid-delete.
	deleting := putInState(t, h, 90_002, runner.StatusDeleting)
	// Killed between error and pending_delete.
	failed := putInState(t, h, 90_003, runner.StatusError)
	// Lost queue messages.
	pendingCreate := putInState(t, h, 90_004, runner.StatusPendingCreate)
	pendingDelete := putInState(t, h, 90_005, runner.StatusPendingDelete)

	rep, err := h.engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.StuckCreating+rep.StuckDeleting+rep.CreatesResent+rep.DeletesResent+rep.ErrorsScheduled != 0 {
		t.Fatalf("nothing is overdue yet, but the reconciler acted: %+v", rep)
	}

	clock.advance(10 * time.Minute)
	rep, err = h.engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := reconcileCounts{StuckCreating: 1, StuckDeleting: 1, ErrorsScheduled: 1, CreatesResent: 1, DeletesResent: 1}
	if got := (reconcileCounts{rep.StuckCreating, rep.StuckDeleting, rep.ErrorsScheduled, rep.CreatesResent, rep.DeletesResent}); got != want {
		t.Fatalf("reconcile report = %+v, want %+v", got, want)
	}
	h.startWorkers(4)
	// The half-made machine was deleted by name before the create was retried:
	// the instance runs on exactly one machine.
	h.waitStatus(creating.Name, runner.StatusRunning)
	if got := h.provider.DeleteCalls(creating.Name); got < 1 {
		t.Fatalf("stuck creating: machine never deleted by name before retry (deletes = %d)", got)
	}
	count := 0
	for _, m := range h.provider.Machines() {
		if m.Name == creating.Name {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("machines named %s = %d, want 1", creating.Name, count)
	}
	h.waitStatus(deleting.Name, runner.StatusDeleted)
	h.waitStatus(failed.Name, runner.StatusDeleted)
	h.waitStatus(pendingCreate.Name, runner.StatusRunning)
	h.waitStatus(pendingDelete.Name, runner.StatusDeleted)
}

type reconcileCounts struct{ StuckCreating, StuckDeleting, ErrorsScheduled, CreatesResent, DeletesResent int }

// recordingProvider records the order of calls and fails the first creates
// after the machine was made — a cloud that errors yet leaves a VM.
type recordingProvider struct {
	providers.Provider
	mu        sync.Mutex
	calls     []string
	failFirst int
}

func (p *recordingProvider) CreateInstance(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	p.mu.Lock()
	p.calls = append(p.calls, "create "+req.Name)
	fail := p.failFirst > 0
	p.failFirst--
	p.mu.Unlock()
	inst, err := p.Provider.CreateInstance(ctx, req)
	if fail && err == nil {
		return providers.Instance{}, &providers.Error{Op: "CreateInstance", Instance: req.Name, Fault: "quota check failed after the VM was allocated"}
	}
	return inst, err
}

func (p *recordingProvider) DeleteInstance(ctx context.Context, instance string) error {
	p.mu.Lock()
	p.calls = append(p.calls, "delete "+instance)
	p.mu.Unlock()
	return p.Provider.DeleteInstance(ctx, instance)
}

func (p *recordingProvider) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.calls...)
}

// P13: after a failed create the provider is asked to delete by name before
// anything else happens; the retry never makes a second machine of that name.
func TestP13FailedCreateIsDeletedByNameBeforeRetry(t *testing.T) {
	rec := &recordingProvider{failFirst: 1}
	h := newHarness(t, harnessOptions{wrap: func(p providers.Provider) providers.Provider { rec.Provider = p; return rec }})
	h.startWorkers(2)
	h.deliver(job(events.ActionQueued, 95_001, ""))
	name := nameFor(95_001)
	h.waitStatus(name, runner.StatusRunning)
	want := []string{"create " + name, "delete " + name, "create " + name}
	got := rec.log()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("provider calls = %v, want %v", got, want)
	}
	if n := len(h.provider.Machines()); n != 1 {
		t.Fatalf("machines = %d, want 1", n)
	}
	// The JIT runner of the failed attempt was removed; only the retry's is left (P10).
	if n := len(h.github.Runners()); n != 1 {
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

func testRestartMidFlightLosesNothing(t *testing.T, o harnessOptions) {
	h := newHarness(t, o)
	ctx := context.Background()
	h.deliver(job(events.ActionQueued, 96_001, "")) // accepted, never received
	h.deliver(job(events.ActionQueued, 96_002, ""))
	// A worker takes one message and dies before acknowledging it.
	msgs, err := h.queue.Receive(ctx, queueOpts(time.Second))
	if err != nil || len(msgs) == 0 {
		t.Fatalf("receive: %v, %d messages", err, len(msgs))
	}
	h.restart()
	h.startWorkers(2)
	h.waitStatus(nameFor(96_001), runner.StatusRunning)
	h.waitStatus(nameFor(96_002), runner.StatusRunning)

	// And a delete accepted just before a stop completes after it.
	h.stopWorkers()
	h.deliver(job(events.ActionCompleted, 96_001, nameFor(96_001)))
	h.restart()
	h.startWorkers(2)
	h.waitStatus(nameFor(96_001), runner.StatusDeleted)
	if n := h.provider.CreateCalls(nameFor(96_001)); n != 1 {
		t.Fatalf("creates = %d, want 1", n)
	}
}
