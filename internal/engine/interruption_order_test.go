package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

// The job an interruption owes a re-run is the job the runner ran, and it
// is owed whatever order the interruption, the instance's delete and the
// job's completed arrive in. Each test below is an order the fault
// simulation found (issue #18).

// runAnothersJob makes an instance for job made, and gives job ran to its
// runner instead, as GitHub gives a queued job to any idle matching
// runner.
func runAnothersJob(t *testing.T, w *enginetest.World, made, ran int64) *runner.Instance {
	t.Helper()
	w.Deliver(enginetest.Event(runner.ActionQueued, made, ""))
	w.Drain()
	name := enginetest.InstanceName(made)
	if inst := w.Instance(name); inst.Status != runner.StatusRunning || inst.ProviderID == "" {
		t.Fatalf("instance of job %d after its create: %+v", made, inst)
	}
	w.GitHub.SetJob(ran, "queued", "", "")
	w.GitHub.StartJob(ran, name)
	w.Deliver(enginetest.Event(runner.ActionInProgress, ran, name))
	inst := w.Instance(name)
	if inst.ActiveJobID != ran {
		t.Fatalf("instance %s after job %d's in_progress: %+v", name, ran, inst)
	}
	return inst
}

// polledNotice is a reconcile pass's notice: it names the machine.
func polledNotice(inst *runner.Instance) engine.InterruptionNotice {
	n := spotNotice(inst)
	n.Instance, n.Source = inst.Name, "reconciler"
	return n
}

// Found by the fault simulation (seed 1118 of -jobs 50 before the fix): the
// runner made for job 3034 ran job 3016; the cloud took the machine back
// while every poll failed; an operator force-deleted the instance; the poll
// then found the machine, but no live instance ("not_ours"), and job 3016,
// failed by the interruption ten minutes later, was never re-run.
func TestInterruptionLearntAfterTheForcedDeleteReRunsTheJobTheRunnerRan(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	ctx := context.Background()
	inst := runAnothersJob(t, w, 3034, 3016)
	w.Provider.Interrupt(inst.ProviderID)
	if _, err := w.Engine.ForceDelete(ctx, inst.Name); err != nil {
		t.Fatal(err)
	}
	w.Drain()
	if got := w.Instance(inst.Name); got.Status != runner.StatusDeleted {
		t.Fatalf("instance after the forced delete: %+v", got)
	}

	interrupt(t, w, polledNotice(inst), engine.InterruptionMarked)
	interrupt(t, w, polledNotice(inst), engine.InterruptionNotOurs) // every later poll
	if job := w.Job(3016); job.Interrupted != inst.Name || job.Status != runner.JobServed {
		t.Fatalf("job 3016 after the notice: %+v; want it to carry the interruption", job)
	}
	if job := w.Job(3034); job.Interrupted != "" {
		t.Fatalf("job 3034, which the instance was made for but did not run: %+v; want no interruption", job)
	}

	w.GitHub.FinishJob(3016, "failure")
	w.Deliver(failedOn(3016, inst.Name))
	w.Deliver(failedOn(3016, inst.Name)) // redelivered
	w.Drain()
	if n := w.GitHub.Reruns(3016); n != 1 {
		t.Fatalf("GitHub re-ran job 3016 %d times; want exactly 1", n)
	}
	if n := w.GitHub.Reruns(3034); n != 0 {
		t.Fatalf("GitHub re-ran job 3034 %d times; it was not interrupted", n)
	}
}

// The interruption learnt only after the job's completed (its runner lost,
// every poll failing until then): the closed job moves to rerun, once.
func TestInterruptionLearntAfterTheJobCompletedReRunsItOnce(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	inst := runAnothersJob(t, w, 3101, 3102)
	w.Provider.Interrupt(inst.ProviderID)
	w.GitHub.FinishJob(3102, "failure")
	w.Deliver(failedOn(3102, inst.Name))
	w.Drain()
	if job := w.Job(3102); job.Status != runner.JobClosed {
		t.Fatalf("job 3102 after its completed: %+v; want closed (the interruption is not known yet)", job)
	}

	interrupt(t, w, polledNotice(inst), engine.InterruptionMarked)
	w.Drain()
	interrupt(t, w, polledNotice(inst), engine.InterruptionNotOurs)
	w.Drain()
	if n := w.GitHub.Reruns(3102); n != 1 {
		t.Fatalf("GitHub re-ran job 3102 %d times; want exactly 1", n)
	}
	if job := w.Job(3102); job.Status != runner.JobClosed || job.RerunOutcome != runner.RerunDone {
		t.Fatalf("job 3102 after its re-run: %+v", job)
	}
}

// A job that succeeded, or failed on its own before the warning, is not
// re-run when the interruption is learnt after its completed.
func TestInterruptionLearntAfterAJobThatDidNotFailByItIsNotReRun(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	inst := runAnothersJob(t, w, 3201, 3202)
	w.GitHub.FinishJob(3202, "success")
	ev := enginetest.Event(runner.ActionCompleted, 3202, inst.Name)
	ev.Conclusion = "success"
	w.Deliver(ev)
	w.Drain()
	w.Provider.Interrupt(inst.ProviderID)
	interrupt(t, w, polledNotice(inst), engine.InterruptionNotOurs)
	w.Drain()
	if n := w.GitHub.Reruns(3202); n != 0 {
		t.Fatalf("GitHub re-ran a job that succeeded %d times", n)
	}
}

// Found by the fault simulation (seed 2430 of -jobs 50 before the fix):
// GitHub confirmed a runner removed, the provider's delete then failed,
// and every retry of the delete asked GitHub again — a provider failing
// for minutes cost one job 63 GitHub calls. The removal is now recorded
// on the instance, and a retry goes straight to the machine.
func TestDeleteRetryDoesNotAskGitHubAgainOnceTheRunnerIsRemoved(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	ctx := context.Background()
	w.Deliver(enginetest.Event(runner.ActionQueued, 3301, ""))
	w.Drain()
	name := enginetest.InstanceName(3301)
	w.Provider.SetFaults(simulated.Faults{AlwaysFailDelete: true})
	if _, err := w.Engine.RequestDelete(ctx, name); err != nil {
		t.Fatal(err)
	}
	w.GitHub.ResetCalls()
	w.StartWorkers(2)
	w.WaitFor("three failed delete attempts", func() bool {
		inst := w.Instance(name)
		return inst.Status == runner.StatusPendingDelete && inst.Attempts >= 3
	})
	if got := w.Instance(name); !got.RunnerRemoved {
		t.Fatalf("instance after failing deletes: %+v; want the runner's removal recorded", got)
	}
	if n := w.GitHub.Calls(ghsim.OpRemoveRunner); n != 1 {
		t.Fatalf("the delete's retries asked GitHub to remove the runner %d times; want 1", n)
	}
	w.Provider.SetFaults(simulated.Faults{})
	w.WaitStatus(name, runner.StatusDeleted)
}

// Found by the fault simulation (seed 919 of -jobs 200, at ddbcc09): the
// re-run call reached GitHub, the process died before its outcome was
// written, and the re-run's attempt ran to its end before the repeat a
// minute later — so GitHub took the repeat too, and the job was re-run
// twice. The repeat now asks for the run's latest attempt first.
func TestRerunRepeatedAfterTheFirstAttemptFinishedIsNotMadeTwice(t *testing.T) {
	clock := &testclock.Clock{}
	fired := &atomic.Bool{}
	w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now, WrapStore: func(s store.Store) store.Store {
		return &crashingStore{Store: s, when: func(next *runner.Job) (bool, bool) { return next.RerunOutcome != "", false }, fired: fired}
	}})
	inst := runningJob(t, w, 3501)
	interrupt(t, w, spotNotice(inst), engine.InterruptionMarked)
	w.GitHub.FinishJob(3501, "failure")
	w.Deliver(failedOn(3501, inst.Name))
	if failed := work(t, w); failed == 0 || !fired.Load() {
		t.Fatalf("the crash was not injected (failed messages %d)", failed)
	}
	w.Crash(0)
	w.GitHub.MarkRerunDone(3501) // the re-run's attempt ran to its end
	clock.Advance(2 * time.Minute)
	enginetest.Eventually(t, "the re-run is recorded", func() bool {
		work(t, w)
		return w.Job(3501).Status == runner.JobClosed
	})
	if n := w.GitHub.Reruns(3501); n != 1 {
		t.Fatalf("GitHub re-ran job 3501 %d times, want exactly 1", n)
	}
}

// Found by make sim (seed 17091 of -jobs 50, with eight others, at
// ddbcc09): a create hung while the machine booted, its runner ran
// another job to its end (so this instance's job was handed that job's
// instance), the process died, and recovery retried the create — a new
// machine and runner for a job already covered, two instances serving it.
// An instance whose runner already ran a job is never created again.
func TestCreateOfAnInstanceWhoseRunnerRanAJobIsNotRetried(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	ctx := context.Background()
	inst := putInState(t, w, 3601, runner.StatusCreating)
	if err := rewrite(w, inst.Name, func(next *runner.Instance) { next.RunnerStatus = runner.RunnerTerminated }); err != nil {
		t.Fatal(err)
	}
	if err := w.Engine.RecoverAtStart(ctx); err != nil {
		t.Fatal(err)
	}
	w.Drain()
	got := w.Instance(inst.Name)
	if got.Status == runner.StatusPendingCreate || got.Status == runner.StatusCreating || got.Status == runner.StatusRunning {
		t.Fatalf("instance whose runner ran a job, after its create was cut off: %+v; want it on its way out, not created again", got)
	}
	if n := w.GitHub.Calls(ghsim.OpGenerateJITConfig); n != 0 {
		t.Fatalf("%d JIT registrations for an instance no job needs", n)
	}
}

// Found by make sim (seed 15542 of -jobs 50, at ddbcc09): the cloud took
// back the machine of an instance whose create hung, the poll marked the
// instance, and the retried create made another machine under the same
// name — whose runner's job, failed on its own, was re-run for the first
// machine's interruption. A retried create clears the mark.
func TestRetriedCreateClearsTheFirstMachinesInterruption(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	ctx := context.Background()
	inst := putInState(t, w, 3701, runner.StatusCreating)
	if err := rewrite(w, inst.Name, func(next *runner.Instance) {
		next.Interruption, next.InterruptedAt, next.InterruptedSince = runner.InterruptionSpot, time.Now(), time.Now()
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Engine.RecoverAtStart(ctx); err != nil {
		t.Fatal(err)
	}
	got := w.Instance(inst.Name)
	if got.Status != runner.StatusPendingCreate || got.Interruption != "" || !got.InterruptedAt.IsZero() || !got.InterruptedSince.IsZero() {
		t.Fatalf("instance whose create is retried after its first machine was taken back: %+v; want pending_create, no interruption", got)
	}
}

// Found by make sim (seed 13365 of -jobs 50, at ddbcc09): create attempt
// 1 hung in the provider, a later attempt made its own machine under the
// same name (its runner then ran a job), and attempt 1's failure, coming
// back at last, was cleaned up by name — destroying the later machine
// under its running job. A superseded attempt removes only what it made.
func TestSupersededCreateAttemptNeverTouchesTheLaterMachine(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	w.Provider.SetFaults(simulated.Faults{HangCreates: true})
	w.Deliver(enginetest.Event(runner.ActionQueued, 3801, ""))
	name := enginetest.InstanceName(3801)
	create, err := engine.EncodeMessage(engine.Message{Kind: engine.KindCreate, Instance: name, JobID: 3801})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cutOff := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Engine.HandleMessage(ctx, create) }()
	w.WaitFor("attempt 1 hanging in the provider", func() bool { return w.Provider.Stats().Hangs == 1 })

	// The reconciler gave up on attempt 1; a later attempt made its machine.
	w.Provider.SetFaults(simulated.Faults{})
	later, err := w.Provider.CreateInstance(context.Background(), providers.CreateRequest{Name: name, Pool: enginetest.Pool, PoolID: w.PoolID(enginetest.Pool), Labels: enginetest.Labels()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rewrite(w, name, func(next *runner.Instance) {
		next.CreateAttempt, next.ProviderID, next.RunnerStatus, next.ActiveJobID = 2, later.ProviderID, runner.RunnerActive, 3802
	}); err != nil {
		t.Fatal(err)
	}

	cutOff() // attempt 1's call returns its failure at last
	<-done
	for _, m := range w.Provider.Machines() {
		if m.ProviderID == later.ProviderID {
			return
		}
	}
	t.Fatalf("the later attempt's machine %s was destroyed by the superseded attempt's clean-up; machines: %+v", later.ProviderID, w.Provider.Machines())
}

// startUnbound makes an instance for job made and gives job ran to its
// runner, with the in_progress delivery lost: the instance is never bound.
func startUnbound(t *testing.T, w *enginetest.World, made, ran int64) *runner.Instance {
	t.Helper()
	w.Deliver(enginetest.Event(runner.ActionQueued, made, ""))
	w.Drain()
	name := enginetest.InstanceName(made)
	if ran != made {
		w.GitHub.SetJob(ran, "queued", "", "")
	}
	w.GitHub.StartJob(ran, name)
	inst := w.Instance(name)
	if inst.Status != runner.StatusRunning || inst.ActiveJobID != 0 {
		t.Fatalf("instance of job %d: %+v", made, inst)
	}
	return inst
}

// Found by the fault simulation (seed 4844 of -jobs 50, make sim at
// ddbcc09): job 1026's in_progress was lost (runfleet down), the cloud
// took its machine back, an operator force-deleted the instance — whose
// job check learnt from GitHub that the job was in progress on it — and
// the poll's notice about the machine then found a deleted instance bound
// to no job: "nothing more is owed". The job, failed by the interruption,
// was never re-run.
func TestInterruptionOfAnUnboundDeletedInstanceReRunsTheJobGitHubNamedItsRunner(t *testing.T) {
	clock := &testclock.Clock{}
	w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now})
	ctx := context.Background()
	inst := startUnbound(t, w, 4001, 4001)
	w.Provider.Interrupt(inst.ProviderID)
	if _, err := w.Engine.ForceDelete(ctx, inst.Name); err != nil {
		t.Fatal(err)
	}
	w.Drain()
	// The job's backoff over, a reconcile pass checks the job (GitHub:
	// in progress on the deleted instance's runner), and polls the
	// provider, which reports the machine interrupted: in either order,
	// twice.
	clock.Advance(time.Minute)
	for range 2 {
		if _, err := w.Engine.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		w.Drain()
	}
	if job := w.Job(4001); job.Status != runner.JobServed || job.RunnerName != inst.Name || job.Interrupted != inst.Name {
		t.Fatalf("job 4001 after the reconcile passes: %+v; want served on %s, as GitHub says, and interrupted\n%s", job, inst.Name, w.Logs.Tail(30))
	}
	interrupt(t, w, polledNotice(inst), engine.InterruptionNotOurs) // every later poll
	w.GitHub.FinishJob(4001, "failure")
	w.Deliver(failedOn(4001, inst.Name))
	w.Deliver(failedOn(4001, inst.Name)) // redelivered
	w.Drain()
	if n := w.GitHub.Reruns(4001); n != 1 {
		t.Fatalf("GitHub re-ran job 4001 %d times; want exactly 1", n)
	}
}
