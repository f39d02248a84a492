package engine_test

// Each test here builds one failure a peer autoscaler is known for
// (../shared/design/lessons-from-peers.md) and shows runfleet's outcome.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/events"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers/simulated"
)

// P2: every accepted queued job gets exactly one runner, whatever the order
// of in_progress/completed/redelivered webhooks.
func TestP2EveryQueuedJobGetsExactlyOneRunnerInAnyOrder(t *testing.T) {
	orders := [][]string{
		{"queued", "in_progress", "completed"},
		{"queued", "completed", "in_progress"},
		{"in_progress", "queued", "completed"},
		{"completed", "queued", "in_progress"},
		{"queued", "queued", "in_progress", "queued", "completed", "queued"},
		{"queued", "waiting", "queued", "in_progress", "completed"},
	}
	h := newHarness(t, harnessOptions{})
	h.startWorkers(4)
	for i, order := range orders {
		id := int64(10_000 + i)
		name := nameFor(id)
		for _, action := range order {
			runnerName := ""
			if action == events.ActionInProgress || action == events.ActionCompleted {
				runnerName = name
			}
			h.deliver(job(action, id, runnerName))
		}
		h.waitFor(fmt.Sprintf("order %v to settle", order), func() bool {
			inst, err := h.store.GetInstance(context.Background(), name)
			return err == nil && (inst.Status == runner.StatusRunning || inst.Status == runner.StatusDeleted)
		})
	}
	time.Sleep(100 * time.Millisecond) // any stray duplicate create would land now
	for i, order := range orders {
		name := nameFor(int64(10_000 + i))
		inst := h.instance(name)
		creates := h.provider.CreateCalls(name)
		switch {
		case creates > 1:
			t.Errorf("order %v: provider creates = %d, want at most 1", order, creates)
		case inst.Status == runner.StatusRunning && creates != 1:
			t.Errorf("order %v: running instance with %d creates", order, creates)
		}
		// A completed job whose instance was still pending_create is deleted
		// without a machine ever being made — never with two.
	}
	live, _ := h.store.ListLiveInstances(context.Background())
	if len(h.provider.Machines()) != len(live) {
		t.Fatalf("machines = %d, live instances = %d", len(h.provider.Machines()), len(live))
	}
}

// P3: the same delivery 5×, the same job via 2 deliveries, and the same queue
// message twice → one instance, one provider create.
func TestP3DuplicatesCollapseToOneInstance(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	ctx := context.Background()
	id := int64(20_001)
	name := nameFor(id)
	for range 5 {
		if _, err := h.engine.OnWorkflowJob(ctx, "same-delivery", job(events.ActionQueued, id, "")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.engine.OnWorkflowJob(ctx, "other-delivery", job(events.ActionQueued, id, "")); err != nil {
		t.Fatal(err)
	}
	// And the create message itself duplicated on the queue.
	body, _ := events.Encode(events.Message{Kind: events.KindCreate, Instance: name, JobID: id})
	for range 2 {
		if err := h.queue.Send(ctx, body, 0); err != nil {
			t.Fatal(err)
		}
	}
	h.startWorkers(4)
	h.waitStatus(name, runner.StatusRunning)
	time.Sleep(100 * time.Millisecond)
	if got := h.provider.CreateCalls(name); got != 1 {
		t.Fatalf("provider creates = %d, want 1", got)
	}
	if got := h.github.Calls("GenerateJITConfig"); got != 1 {
		t.Fatalf("JIT configs = %d, want 1", got)
	}
	live, _ := h.store.ListLiveInstances(ctx)
	if len(live) != 1 {
		t.Fatalf("live instances = %d, want 1", len(live))
	}
}

// P4: a burst of queued jobs against max_runners=N never has more than N live
// instances at any moment — and every job still gets its runner.
func TestP4BurstNeverExceedsMaxRunners(t *testing.T) {
	const maxRunners, jobs = 4, 40
	h := newHarness(t, harnessOptions{maxRunners: maxRunners})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var peak atomic.Int64
	var watch sync.WaitGroup
	watch.Go(func() {
		for ctx.Err() == nil {
			used, err := h.store.PoolUsage(ctx, testPool)
			if err == nil && int64(used) > peak.Load() {
				peak.Store(int64(used))
			}
			if m := int64(len(h.provider.Machines())); m > peak.Load() {
				peak.Store(m)
			}
			time.Sleep(time.Millisecond)
		}
	})
	// The "CI": every running runner finishes its job soon after it starts.
	watch.Go(func() {
		for ctx.Err() == nil {
			live, _ := h.store.ListLiveInstances(ctx)
			for _, inst := range live {
				if inst.Status == runner.StatusRunning {
					_, _ = h.engine.OnWorkflowJob(ctx, "c-"+inst.Name, job(events.ActionCompleted, inst.JobID, inst.Name))
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	h.startWorkers(8)
	var burst sync.WaitGroup
	for i := range jobs {
		burst.Go(func() { h.deliver(job(events.ActionQueued, int64(30_000+i), "")) })
	}
	burst.Wait()
	h.waitFor("every job to be served and deleted", func() bool {
		for i := range jobs {
			inst, err := h.store.GetInstance(ctx, nameFor(int64(30_000+i)))
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
		if got := h.provider.CreateCalls(nameFor(int64(30_000 + i))); got != 1 {
			t.Fatalf("job %d: creates = %d, want 1", i, got)
		}
	}
}

// P5: after any interleaving of workers, reconciler and operators, every
// pending_delete reaches deleted; while it cannot, it retries visibly.
func TestP5PendingDeleteAlwaysResolves(t *testing.T) {
	h := newHarness(t, harnessOptions{maxRunners: 20})
	ctx := context.Background()
	const n = 12
	h.startWorkers(4)
	for i := range n {
		h.deliver(job(events.ActionQueued, int64(40_000+i), ""))
	}
	for i := range n {
		h.waitStatus(nameFor(int64(40_000+i)), runner.StatusRunning)
	}
	h.provider.SetFaults(simulated.Faults{DeleteFailureRate: 0.5})
	var wg sync.WaitGroup
	for i := range n {
		id := int64(40_000 + i)
		name := nameFor(id)
		wg.Go(func() { h.deliver(job(events.ActionCompleted, id, name)) })
		wg.Go(func() { _, _ = h.engine.ForceDelete(ctx, name, false) })
		wg.Go(func() { _, _ = h.engine.Reconcile(ctx) })
		wg.Go(func() { h.deliver(job(events.ActionCompleted, id, name)) })
	}
	wg.Wait()
	for i := range n {
		h.waitStatus(nameFor(int64(40_000+i)), runner.StatusDeleted)
	}

	// A delete that can never succeed stays pending_delete with a growing,
	// visible retry schedule rather than silently stuck.
	h.provider.SetFaults(simulated.Faults{AlwaysFailDelete: true})
	h.deliver(job(events.ActionQueued, 40_100, ""))
	name := nameFor(40_100)
	h.waitStatus(name, runner.StatusRunning)
	h.deliver(job(events.ActionCompleted, 40_100, name))
	var seen []time.Duration
	h.waitFor("three failed delete attempts", func() bool {
		inst := h.instance(name)
		if inst.Status == runner.StatusPendingDelete && inst.Attempts >= 3 {
			seen = append(seen, inst.NextAttemptAt.Sub(inst.UpdatedAt))
			return true
		}
		return false
	})
	inst := h.instance(name)
	if inst.ProviderFault == "" || inst.NextAttemptAt.IsZero() {
		t.Fatalf("retrying delete must show its fault and next attempt: %+v", inst)
	}
	if d := inst.NextAttemptAt.Sub(inst.UpdatedAt); d < 40*time.Millisecond {
		t.Fatalf("backoff after %d attempts = %s, want it to have grown past the 20ms minimum", inst.Attempts, d)
	}
}

// P7: a provider that never returns is cut off at the bootstrap timeout; the
// instance goes to error → pending_delete and ends deleted.
func TestP7HungProviderIsCutOffAtBootstrapTimeout(t *testing.T) {
	h := newHarness(t, harnessOptions{bootstrapTimeout: 50 * time.Millisecond, faults: simulated.Faults{HangCreates: true}})
	h.startWorkers(2)
	h.deliver(job(events.ActionQueued, 50_001, ""))
	name := nameFor(50_001)
	inst := h.waitStatus(name, runner.StatusDeleted)
	if !strings.Contains(inst.ProviderFault, "bootstrap timeout") {
		t.Fatalf("fault should name the timeout: %q", inst.ProviderFault)
	}
	if got := h.provider.CreateCalls(name); got != 3 {
		t.Fatalf("create attempts = %d, want 3 (MaxCreateAttempts)", got)
	}
	if len(h.github.Runners()) != 0 {
		t.Fatal("JIT runners of failed creates must be removed from GitHub (P10)")
	}
	sawError := false
	for _, l := range h.logs.Lines(t, nil) {
		if l["msg"] == "create failed for good; instance marked error" && l["instance"] == name {
			sawError = true
		}
	}
	if !sawError {
		t.Fatal("instance never went through error")
	}
}

// P8: pending_force_delete completes even when the provider fails every
// time; the fault is recorded.
func TestP8ForceDeleteCompletesWhenProviderAlwaysFails(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.startWorkers(2)
	h.deliver(job(events.ActionQueued, 60_001, ""))
	name := nameFor(60_001)
	h.waitStatus(name, runner.StatusRunning)
	h.provider.SetFaults(simulated.Faults{AlwaysFailDelete: true})
	h.deliver(job(events.ActionCompleted, 60_001, name))
	h.waitFor("a failed delete", func() bool { return h.instance(name).Attempts >= 1 })

	inst, err := h.engine.ForceDelete(context.Background(), name, true)
	if err != nil {
		t.Fatal(err)
	}
	if inst.Status != runner.StatusPendingForceDelete && inst.Status != runner.StatusDeleting && inst.Status != runner.StatusDeleted {
		t.Fatalf("after force delete: %s", inst.Status)
	}
	inst = h.waitStatus(name, runner.StatusDeleted)
	if !strings.Contains(inst.ProviderFault, simulated.FaultDeleteFailed) {
		t.Fatalf("provider fault not recorded: %q", inst.ProviderFault)
	}
}

// P6 (the operator part): force delete works from a stuck `creating`.
func TestForceDeleteFromStuckCreating(t *testing.T) {
	h := newHarness(t, harnessOptions{bootstrapTimeout: time.Hour, faults: simulated.Faults{HangCreates: true}})
	h.startWorkers(2)
	h.deliver(job(events.ActionQueued, 61_001, ""))
	name := nameFor(61_001)
	h.waitStatus(name, runner.StatusCreating)
	if _, err := h.engine.ForceDelete(context.Background(), name, true); err != nil {
		t.Fatal(err)
	}
	h.waitStatus(name, runner.StatusDeleted)
}

// P9: a runner GitHub reports busy is never destroyed by a normal delete; it
// is retried later, and an operator's ordinary delete is refused at once.
func TestP9BusyRunnerIsNeverDestroyed(t *testing.T) {
	h := newHarness(t, harnessOptions{})
	h.startWorkers(2)
	h.deliver(job(events.ActionQueued, 70_001, ""))
	name := nameFor(70_001)
	h.waitStatus(name, runner.StatusRunning)
	h.github.SetBusy(name, true)

	// A (wrong or early) completed webhook asks for the delete while the
	// runner is still running a job.
	h.deliver(job(events.ActionCompleted, 70_001, name))
	h.waitFor("two busy retries", func() bool { return h.instance(name).Attempts >= 2 })
	if got := h.provider.DeleteCalls(name); got != 0 {
		t.Fatalf("busy runner's machine got %d delete calls", got)
	}
	if len(h.provider.Machines()) != 1 {
		t.Fatal("busy runner's machine is gone")
	}
	_, err := h.engine.ForceDelete(context.Background(), name, false)
	if !errors.Is(err, github.ErrRunnerBusy) {
		t.Fatalf("operator delete of a busy runner: err = %v, want ErrRunnerBusy", err)
	}

	h.github.SetBusy(name, false)
	h.waitStatus(name, runner.StatusDeleted)
	if len(h.provider.Machines()) != 0 {
		t.Fatal("machine not deleted once the runner was idle")
	}
}
