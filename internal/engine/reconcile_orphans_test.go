package engine_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/providers"
)

// A provider that ignored a delete by name, or a crash between a machine and
// its record, leaves a machine no live instance owns: the reconciler finds it
// by listing and deletes it; machines of live instances are untouched.
func TestReconcilerDeletesOrphanedMachines(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	ctx := context.Background()
	w.StartWorkers(2)
	keep := w.RunJob(110_001)
	w.StopWorkers()
	for _, name := range []string{enginetest.InstanceName(110_002), "someone-elses-vm"} {
		req := providers.CreateRequest{Name: name, Pool: enginetest.Pool, PoolID: w.PoolID(enginetest.Pool)}
		if _, err := w.Provider.CreateInstance(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := w.Engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OrphanMachinesDeleted != 1 {
		t.Fatalf("orphan machines deleted = %d, want 1", rep.OrphanMachinesDeleted)
	}
	var names []string
	for _, m := range w.Provider.Machines() {
		names = append(names, m.Name)
	}
	if len(names) != 2 || !slices.Contains(names, keep) || !slices.Contains(names, "someone-elses-vm") {
		t.Fatalf("machines after reconcile = %v; want the live instance's and the foreign one", names)
	}
}

// A JIT runner registered by this controller with no live record is removed;
// busy runners and other controllers' runners are never touched (P10).
func TestReconcilerRemovesLeakedRunnersOnlyIfOurs(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	ctx := context.Background()
	owner := github.Owner{Org: enginetest.Owner}
	own := runner.ControllerLabel(enginetest.Controller)
	register := func(name string, labels ...string) {
		if _, err := w.GitHub.GenerateJITConfig(ctx, github.JITRequest{Owner: owner, Name: name, Labels: labels}); err != nil {
			t.Fatal(err)
		}
	}
	leaked, busy, others := enginetest.InstanceName(120_001), enginetest.InstanceName(120_002), enginetest.InstanceName(120_003)
	register(leaked, "self-hosted", own)
	register(busy, "self-hosted", own)
	register(others, "self-hosted", runner.ControllerLabel("other"))
	w.GitHub.SetBusy(busy, true)

	rep, err := w.Engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OrphanRunnersRemoved != 1 {
		t.Fatalf("orphan runners removed = %d, want 1", rep.OrphanRunnersRemoved)
	}
	var left []string
	for _, r := range w.GitHub.Runners() {
		left = append(left, r.Name)
	}
	if slices.Contains(left, leaked) || len(left) != 2 {
		t.Fatalf("runners left = %v", left)
	}
}

// P11: the completed webhook is sometimes never delivered. The reconciler
// finds runners that finished (GitHub no longer lists them busy) or never
// came online, and deletes them; a runner still running a job is left
// alone. A finished runner is reaped only on two not-busy readings a
// confirmation window apart (GitHub's busy flag has been seen false in the
// middle of a job). A finished runner that lives on fails the test.
func TestP11RunnersThatFinishedOrNeverCameOnlineAreDeleted(t *testing.T) {
	clock := &testclock.Clock{}
	w := enginetest.NewWorld(t, enginetest.Options{
		Now: clock.Now, ConfirmWindow: time.Minute,
		Pools: enginetest.OnePool(func(p *runner.Pool) { p.BootstrapTimeout = time.Minute }),
	})
	ctx := context.Background()
	w.StartWorkers(2)
	const neverOnlineJob, busyJob, finishedJob = 130_001, 130_002, 130_003
	neverOnline, busy, finished := enginetest.InstanceName(neverOnlineJob), enginetest.InstanceName(busyJob), enginetest.InstanceName(finishedJob)
	for _, id := range []int64{neverOnlineJob, busyJob, finishedJob} {
		w.Deliver(enginetest.Event(runner.ActionQueued, id, ""))
		w.WaitStatus(enginetest.InstanceName(id), runner.StatusRunning)
	}
	for _, id := range []int64{busyJob, finishedJob} {
		name := enginetest.InstanceName(id)
		w.GitHub.StartJob(id, name)
		w.Deliver(enginetest.Event(runner.ActionInProgress, id, name))
	}
	// The finished job's runner removes itself; its completed never comes.
	w.GitHub.FinishJob(finishedJob, "success")

	rep, err := w.Engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.UnneededScheduled != 0 || rep.FinishedReaped != 0 || rep.NotBusyFirstSeen != 1 {
		t.Fatalf("first pass: %+v; want one runner seen not busy and nothing deleted yet", rep)
	}
	if got := w.Instance(finished).Status; got != runner.StatusRunning {
		t.Fatalf("one not-busy reading deleted the finished runner: %s", got)
	}

	clock.Advance(2 * time.Minute)
	if rep, err = w.Engine.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	if rep.UnneededScheduled != 1 || rep.FinishedReaped != 1 {
		t.Fatalf("second pass: unneeded %d, finished reaped %d; want 1 and 1", rep.UnneededScheduled, rep.FinishedReaped)
	}
	for _, name := range []string{neverOnline, finished} {
		if inst := w.WaitStatus(name, runner.StatusDeleted); inst.ProviderFault == "" {
			t.Errorf("%s: the reason should be recorded on the instance", name)
		}
	}
	if got := w.Instance(busy).Status; got != runner.StatusRunning {
		t.Fatalf("runner running a job: %s, want running", got)
	}
	// The job whose runner never came online is still queued in GitHub: it
	// gets its next instance. The finished job gets none.
	w.WaitFor("a new instance for the job whose runner never came online", func() bool {
		return w.Job(neverOnlineJob).Made == 2
	})
	w.WaitStatus(w.Job(neverOnlineJob).Instance, runner.StatusRunning)
	if job := w.Job(finishedJob); job.Made != 1 || job.Status != runner.JobServed {
		t.Fatalf("finished job: made %d, status %s; want 1 and served", job.Made, job.Status)
	}
	if n := len(w.Provider.Machines()); n != 2 {
		t.Fatalf("machines = %d, want the busy runner's and the replacement's", n)
	}
}
