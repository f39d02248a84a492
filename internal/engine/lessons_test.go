package engine_test

// Each test here builds one failure a peer autoscaler (the Terraform AWS
// runner module, GARM, actions-runner-controller) is known for, numbered as
// in the README's guarantees table (P2, P3, …), and shows runfleet's outcome.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers/simulated"
)

// P2: every accepted queued job gets exactly one runner, whatever the order
// of in_progress/completed/redelivered webhooks. GitHub is played as it
// behaves: a runner of ours can only take a job runfleet heard of, so each
// job's first queued is delivered first, and GitHub hands the job to that
// runner once it is online; after that the deliveries come in any order,
// late or again. A job left with no runner, given two, or whose runner
// lives on after the job finished fails the test.
func TestP2EveryQueuedJobGetsExactlyOneRunnerInAnyOrder(t *testing.T) {
	const (
		queued     = runner.ActionQueued
		inProgress = runner.ActionInProgress
		completed  = runner.ActionCompleted
		waiting    = runner.ActionWaiting
	)
	orders := [][]runner.JobAction{
		{queued, inProgress, completed},
		{queued, completed, inProgress},
		{queued, queued, inProgress, queued, completed, queued},
		{queued, waiting, queued, inProgress, completed},
		{queued, inProgress, queued, completed, inProgress},
		{queued, completed, queued, inProgress, completed},
	}
	w := enginetest.NewWorld(t, enginetest.Options{})
	w.StartWorkers(4)
	for i, order := range orders {
		id := int64(10_000 + i)
		name := enginetest.InstanceName(id)
		w.Deliver(enginetest.Event(order[0], id, ""))
		w.WaitStatus(name, runner.StatusRunning)
		w.GitHub.StartJob(id, name)
		finished := false
		for _, action := range order[1:] {
			runnerName := ""
			switch action {
			case completed:
				if !finished {
					// The job ends; its JIT runner removes itself.
					w.GitHub.FinishJob(id, "success")
					finished = true
				}
				runnerName = name
			case inProgress:
				runnerName = name
			}
			out := w.Deliver(enginetest.Event(action, id, runnerName))
			if action == queued && out.Result != engine.ResultDuplicate && out.Result != engine.ResultJobSettled {
				t.Errorf("order %v: a queued after the first made something: %+v", order, out)
			}
		}
		w.WaitStatus(name, runner.StatusDeleted)
	}
	w.Drain()
	for i, order := range orders {
		id := int64(10_000 + i)
		name := enginetest.InstanceName(id)
		if got := w.Provider.CreateCalls(name); got != 1 {
			t.Errorf("order %v: provider creates = %d, want exactly 1", order, got)
		}
		if job := w.Job(id); job.Made != 1 || job.Status != runner.JobClosed {
			t.Errorf("order %v: job made %d instances and is %s; want 1 and closed", order, job.Made, job.Status)
		}
	}
	if live, machines := w.Live(), w.Provider.Machines(); len(live) != 0 || len(machines) != 0 {
		t.Fatalf("after every job finished: live instances %d, machines %d; want none", len(live), len(machines))
	}
}

// P2, the race peers lose jobs to: GitHub gives a job to any idle runner
// whose labels cover it, so job A may start on the runner made for job B.
// B must not be left without a runner: A's own, now spare, is handed to B
// — and no third runner is made.
func TestP2JobTakenByAnotherJobsRunnerLeavesNoJobWithout(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	ctx := context.Background()
	w.StartWorkers(2)
	a, b := int64(11_001), int64(11_002)
	runnerA, runnerB := enginetest.InstanceName(a), enginetest.InstanceName(b)
	w.Deliver(enginetest.Event(runner.ActionQueued, a, ""))
	w.Deliver(enginetest.Event(runner.ActionQueued, b, ""))
	w.WaitStatus(runnerA, runner.StatusRunning)
	w.WaitStatus(runnerB, runner.StatusRunning)

	w.GitHub.StartJob(a, runnerB)
	w.Deliver(enginetest.Event(runner.ActionInProgress, a, runnerB))
	if job := w.Job(b); job.Status != runner.JobOpen || job.Instance != runnerA {
		t.Fatalf("job B after its runner took job A: %s, instance %q; want open with %s", job.Status, job.Instance, runnerA)
	}
	if rep, err := w.Engine.Reconcile(ctx); err != nil || rep.JobsServed != 0 {
		t.Fatalf("reconcile served %d jobs (%v); job B has a runner and needs no other", rep.JobsServed, err)
	}

	w.GitHub.StartJob(b, runnerA)
	w.Deliver(enginetest.Event(runner.ActionInProgress, b, runnerA))
	w.GitHub.FinishJob(a, "success")
	w.Deliver(enginetest.Event(runner.ActionCompleted, a, runnerB))
	w.GitHub.FinishJob(b, "success")
	w.Deliver(enginetest.Event(runner.ActionCompleted, b, runnerA))
	w.WaitStatus(runnerA, runner.StatusDeleted)
	w.WaitStatus(runnerB, runner.StatusDeleted)
	w.Drain()
	for _, id := range []int64{a, b} {
		if job := w.Job(id); job.Made != 1 || job.Status != runner.JobClosed {
			t.Errorf("job %d made %d instances and is %s; want 1 and closed", id, job.Made, job.Status)
		}
		if got := w.Provider.CreateCalls(enginetest.InstanceName(id)); got != 1 {
			t.Errorf("job %d: provider creates = %d, want 1", id, got)
		}
	}
	if live := w.Live(); len(live) != 0 {
		t.Fatalf("live instances left: %d", len(live))
	}
}

// P3: the same delivery 5×, the same job via 2 deliveries, and the same queue
// message twice → one instance, one provider create.
func TestP3DuplicatesCollapseToOneInstance(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	ctx := context.Background()
	id := int64(20_001)
	name := enginetest.InstanceName(id)
	// A redelivery is processed again; the job ledger makes it change
	// nothing.
	for i, delivery := range []string{"same", "same", "same", "same", "same", "other"} {
		out, err := w.Engine.HandleJobEvent(ctx, enginetest.Event(runner.ActionQueued, id, ""), engine.Webhook(delivery))
		if err != nil {
			t.Fatal(err)
		}
		want := engine.ResultDuplicate
		if i == 0 {
			want = engine.ResultCreated
		}
		if out.Result != want || out.Instance != name {
			t.Fatalf("delivery %d (%s): %+v, want %s of %s", i, delivery, out, want, name)
		}
	}
	// And the create message itself duplicated on the queue.
	body, err := engine.EncodeMessage(engine.Message{Kind: engine.KindCreate, Instance: name, JobID: id})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := w.Queue.Send(ctx, body, 0); err != nil {
			t.Fatal(err)
		}
	}
	w.StartWorkers(4)
	w.WaitStatus(name, runner.StatusRunning)
	w.Drain()
	if got := w.Provider.CreateCalls(name); got != 1 {
		t.Fatalf("provider creates = %d, want 1", got)
	}
	if got := w.GitHub.Calls("GenerateJITConfig"); got != 1 {
		t.Fatalf("JIT configs = %d, want 1", got)
	}
	if live := w.Live(); len(live) != 1 {
		t.Fatalf("live instances = %d, want 1", len(live))
	}
}

// P4: a burst of queued jobs against max_runners=N never has more than N live
// instances at any moment — and every job still gets its runner.
func TestP4BurstNeverExceedsMaxRunners(t *testing.T) {
	const maxRunners, jobs = 4, 40
	w := enginetest.NewWorld(t, enginetest.Options{Pools: enginetest.OnePool(func(p *runner.Pool) { p.MaxRunners = maxRunners })})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var peak atomic.Int64
	var watch sync.WaitGroup
	watch.Go(func() {
		for ctx.Err() == nil {
			used, err := w.Store.PoolUsage(ctx, enginetest.Pool)
			if err == nil && int64(used) > peak.Load() {
				peak.Store(int64(used))
			}
			if m := int64(len(w.Provider.Machines())); m > peak.Load() {
				peak.Store(m)
			}
			time.Sleep(time.Millisecond)
		}
	})
	// The "CI": every running runner finishes its job soon after it starts.
	watch.Go(func() {
		for ctx.Err() == nil {
			live, _ := w.Store.ListLiveInstances(ctx)
			for _, inst := range live {
				if inst.Status == runner.StatusRunning {
					_, _ = w.Engine.HandleJobEvent(ctx, enginetest.Event(runner.ActionCompleted, inst.JobID, inst.Name), engine.Webhook("c-"+inst.Name))
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	w.StartWorkers(8)
	var burst sync.WaitGroup
	for i := range jobs {
		burst.Go(func() {
			if _, err := w.Engine.HandleJobEvent(ctx, enginetest.Event(runner.ActionQueued, int64(30_000+i), ""), engine.Webhook(fmt.Sprintf("q-%d", i))); err != nil {
				t.Error(err)
			}
		})
	}
	burst.Wait()
	w.WaitFor("every job to be served and deleted", func() bool {
		for i := range jobs {
			inst, err := w.Store.GetInstance(ctx, enginetest.InstanceName(int64(30_000+i)))
			if err != nil || inst.Status != runner.StatusDeleted {
				return false
			}
		}
		return true
	})
	cancel()
	watch.Wait()
	if p := peak.Load(); p > maxRunners {
		t.Fatalf("peak live instances = %d, max_runners = %d", p, maxRunners)
	}
	for i := range jobs {
		if got := w.Provider.CreateCalls(enginetest.InstanceName(int64(30_000 + i))); got != 1 {
			t.Fatalf("job %d: creates = %d, want 1", i, got)
		}
	}
}

// P5: after any interleaving of workers, reconciler and operators, every
// pending_delete reaches deleted; while it cannot, it retries visibly.
func TestP5PendingDeleteAlwaysResolves(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{Pools: enginetest.OnePool(func(p *runner.Pool) { p.MaxRunners = 20 })})
	ctx := context.Background()
	const n = 12
	w.StartWorkers(4)
	for i := range n {
		w.Deliver(enginetest.Event(runner.ActionQueued, int64(40_000+i), ""))
	}
	for i := range n {
		id := int64(40_000 + i)
		w.WaitStatus(enginetest.InstanceName(id), runner.StatusRunning)
		// The jobs are cancelled in GitHub: their completed is on its way.
		w.GitHub.SetJob(id, github.JobCompleted, "cancelled", "")
	}
	w.Provider.SetFaults(simulated.Faults{DeleteFailureRate: 0.5})
	var wg sync.WaitGroup
	for i := range n {
		id := int64(40_000 + i)
		name := enginetest.InstanceName(id)
		completed := func() {
			_, _ = w.Engine.HandleJobEvent(ctx, enginetest.Event(runner.ActionCompleted, id, name), engine.Webhook("c-"+name))
		}
		wg.Go(completed)
		wg.Go(func() { _, _ = w.Engine.RequestDelete(ctx, name) })
		wg.Go(func() { _, _ = w.Engine.Reconcile(ctx) })
		wg.Go(completed)
	}
	wg.Wait()
	for i := range n {
		w.WaitStatus(enginetest.InstanceName(int64(40_000+i)), runner.StatusDeleted)
	}

	// A delete that can never succeed stays pending_delete with a growing,
	// visible retry schedule rather than silently stuck.
	w.Provider.SetFaults(simulated.Faults{AlwaysFailDelete: true})
	name := w.RunJob(40_100)
	w.Deliver(enginetest.Event(runner.ActionCompleted, 40_100, name))
	w.WaitFor("three failed delete attempts", func() bool {
		inst := w.Instance(name)
		return inst.Status == runner.StatusPendingDelete && inst.Attempts >= 3
	})
	inst := w.Instance(name)
	if inst.ProviderFault == "" || inst.NextAttemptAt.IsZero() {
		t.Fatalf("retrying delete must show its fault and next attempt: %+v", inst)
	}
	if d := inst.NextAttemptAt.Sub(inst.UpdatedAt); d < 40*time.Millisecond {
		t.Fatalf("backoff after %d attempts = %s, want it to have grown past the 20ms minimum", inst.Attempts, d)
	}
}

// P7: a provider that never returns is cut off at the bootstrap timeout; the
// instance goes to error → pending_delete and ends deleted. The job, still
// queued in GitHub, gets its next instance; once GitHub cancels it, nothing
// is left.
func TestP7HungProviderIsCutOffAtBootstrapTimeout(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{
		Pools:  enginetest.OnePool(func(p *runner.Pool) { p.BootstrapTimeout = 50 * time.Millisecond }),
		Faults: simulated.Faults{HangCreates: true},
	})
	w.StartWorkers(2)
	const id = 50_001
	w.Deliver(enginetest.Event(runner.ActionQueued, id, ""))
	name := enginetest.InstanceName(id)
	inst := w.WaitStatus(name, runner.StatusDeleted)
	if !strings.Contains(inst.ProviderFault, "bootstrap timeout") {
		t.Fatalf("fault should name the timeout: %q", inst.ProviderFault)
	}
	if got := w.Provider.CreateCalls(name); got != 3 {
		t.Fatalf("create attempts = %d, want 3 (MaxCreateAttempts)", got)
	}
	sawError := false
	for _, l := range w.Logs.Lines(t, nil) {
		if l["msg"] == "create failed for good; instance marked error" && l["instance"] == name {
			sawError = true
		}
	}
	if !sawError {
		t.Fatal("instance never went through error")
	}
	w.WaitFor("the job's next instance", func() bool { return w.Job(id).Made >= 2 })
	if next := w.Instance(w.Job(id).InstanceFor(2)); next.JobID != id {
		t.Fatalf("the job's second instance %s was made for job %d", next.Name, next.JobID)
	}

	w.GitHub.SetJob(id, github.JobCompleted, "cancelled", "")
	w.Deliver(enginetest.Event(runner.ActionCompleted, id, ""))
	w.WaitFor("nothing live once the job is cancelled", func() bool { return len(w.Live()) == 0 })
	if job := w.Job(id); job.Status != runner.JobClosed {
		t.Fatalf("job %s after its completed, want closed", job.Status)
	}
	if n := len(w.GitHub.Runners()); n != 0 {
		t.Fatalf("JIT runners of failed creates must be removed from GitHub (P10); %d left", n)
	}
}

// P8: pending_force_delete completes even when the provider fails every
// time; the fault is recorded.
func TestP8ForceDeleteCompletesWhenProviderAlwaysFails(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	w.StartWorkers(2)
	name := w.RunJob(60_001)
	w.Provider.SetFaults(simulated.Faults{AlwaysFailDelete: true})
	w.Deliver(enginetest.Event(runner.ActionCompleted, 60_001, name))
	w.WaitFor("a failed delete", func() bool { return w.Instance(name).Attempts >= 1 })

	inst, err := w.Engine.ForceDelete(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Status != runner.StatusPendingForceDelete && inst.Status != runner.StatusDeleting && inst.Status != runner.StatusDeleted {
		t.Fatalf("after force delete: %s", inst.Status)
	}
	inst = w.WaitStatus(name, runner.StatusDeleted)
	if !strings.Contains(inst.ProviderFault, simulated.FaultDeleteFailed) {
		t.Fatalf("provider fault not recorded: %q", inst.ProviderFault)
	}
}

// P6 (the operator part): force delete works from a stuck `creating`. The
// job is still queued in GitHub, so it gets its next instance.
func TestForceDeleteFromStuckCreating(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{
		Pools:  enginetest.OnePool(func(p *runner.Pool) { p.BootstrapTimeout = time.Hour }),
		Faults: simulated.Faults{HangCreates: true},
		// The hung creates end when the workers stop, at their visibility
		// timeout.
		WorkerVisibility: 2 * time.Second,
	})
	w.StartWorkers(2)
	const id = 61_001
	w.Deliver(enginetest.Event(runner.ActionQueued, id, ""))
	name := enginetest.InstanceName(id)
	w.WaitStatus(name, runner.StatusCreating)
	if _, err := w.Engine.ForceDelete(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	w.WaitStatus(name, runner.StatusDeleted)
	w.WaitFor("the job's next instance", func() bool { return w.Job(id).Made == 2 })
}

// P9: a runner GitHub reports busy is never destroyed by a normal delete; it
// is retried later, and an operator's ordinary delete is refused at once.
func TestP9BusyRunnerIsNeverDestroyed(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	w.StartWorkers(2)
	name := w.RunJob(70_001)
	w.GitHub.SetBusy(name, true)

	// A (wrong or early) completed webhook asks for the delete while the
	// runner is still running a job.
	w.Deliver(enginetest.Event(runner.ActionCompleted, 70_001, name))
	w.WaitFor("two busy retries", func() bool { return w.Instance(name).Attempts >= 2 })
	if got := w.Provider.DeleteCalls(name); got != 0 {
		t.Fatalf("busy runner's machine got %d delete calls", got)
	}
	if len(w.Provider.Machines()) != 1 {
		t.Fatal("busy runner's machine is gone")
	}
	_, err := w.Engine.RequestDelete(context.Background(), name)
	var busy *engine.BusyError
	if !errors.Is(err, github.ErrRunnerBusy) || !errors.As(err, &busy) {
		t.Fatalf("operator delete of a busy runner: err = %v, want a BusyError (ErrRunnerBusy)", err)
	}

	w.GitHub.SetBusy(name, false)
	w.WaitStatus(name, runner.StatusDeleted)
	if len(w.Provider.Machines()) != 0 {
		t.Fatal("machine not deleted once the runner was idle")
	}
}
