package engine_test

import (
	"context"
	"errors"
	"testing"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/providers"
)

// Found by the fault simulation (seed 114): GitHub took the re-run call and
// answered 500. The message was left for the queue's redelivery, five
// minutes later in serve; the re-run attempt finished within them, so
// GitHub accepted the repeated call, and the job was re-run twice. The
// failed call is now repeated by a message of its own, seconds later,
// while the attempt it made is still queued and GitHub refuses a second.
func TestRerunCallFailingAfterItsEffectIsRepeatedBeforeTheAttemptCanFinish(t *testing.T) {
	clock := &testclock.Clock{}
	w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now})
	inst := runningJob(t, w, 2601)
	interrupt(t, w, spotNotice(inst), engine.InterruptionMarked)
	w.GitHub.FinishJob(2601, "failure")
	w.GitHub.FailNextAfterEffect(ghsim.OpRerunJob, errors.New("simulated 500 Internal Server Error"))
	w.Deliver(failedOn(2601, inst.Name))

	if failed := work(t, w); failed != 0 {
		t.Fatalf("%d messages left for redelivery after a failed re-run call; want its repeat sent instead", failed)
	}
	job := w.Job(2601)
	if job.Status != runner.JobRerun || job.RerunCalls != 1 || w.GitHub.Reruns(2601) != 1 {
		t.Fatalf("after the call that failed after its effect: job %+v, GitHub re-runs %d; want rerun with 1 call, 1 re-run", job, w.GitHub.Reruns(2601))
	}
	// The repeat, as the queue delivers it a few seconds later: not taken
	// for a call in flight, it calls at once, and GitHub refuses it.
	repeat, err := engine.EncodeMessage(engine.Message{Kind: engine.KindRerunJob, JobKey: job.Key(), JobID: job.ID, Attempt: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Engine.HandleMessage(context.Background(), repeat); err != nil {
		t.Fatal(err)
	}
	job = w.Job(2601)
	// The repeat asks GitHub for the run's latest attempt first, finds the
	// re-run the failed call made, and does not call again.
	if job.Status != runner.JobClosed || job.RerunOutcome != runner.RerunDone || job.RerunCalls != 2 {
		t.Fatalf("job after the repeated call: %+v; want closed, done, after 2 recorded calls", job)
	}
	if n := w.GitHub.Calls(ghsim.OpRerunJob); n != 1 {
		t.Fatalf("GitHub was asked to re-run job 2601 %d times; want 1", n)
	}
	// The attempt finishing later changes nothing: nothing is left to call.
	w.GitHub.MarkRerunDone(2601)
	w.Drain()
	if n := w.GitHub.Reruns(2601); n != 1 {
		t.Fatalf("GitHub re-ran job 2601 %d times, want exactly 1", n)
	}
}

// Found by the fault simulation (seed 13): a create hung past its
// machine's boot, the runner took its job, and the cloud took the machine
// back before the create returned — so the instance had no provider id,
// the polled interruption matched no instance ("not_ours"), and the job
// that failed on it was not re-run. A poll names the machine too, which
// finds the instance whose create is still in flight.
func TestInterruptionOfAMachineWhoseCreateIsStillInFlightIsFound(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	ctx := context.Background()
	inst := putInState(t, w, 2701, runner.StatusCreating)
	// The runner took the job while the create was in flight.
	if err := rewrite(w, inst.Name, func(next *runner.Instance) {
		next.RunnerStatus, next.ActiveJobID, next.ActiveRunAttempt = runner.RunnerActive, 2701, 1
	}); err != nil {
		t.Fatal(err)
	}
	m, err := w.Provider.CreateInstance(ctx, providers.CreateRequest{Name: inst.Name, Pool: enginetest.Pool, PoolID: w.PoolID(enginetest.Pool), Labels: enginetest.Labels()})
	if err != nil {
		t.Fatal(err)
	}
	if !w.Provider.Interrupt(m.ProviderID) {
		t.Fatal("the simulated provider has no such machine")
	}
	rep, err := w.Engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := w.Instance(inst.Name)
	if rep.Interrupted != 1 || got.Interruption != runner.InterruptionSpot {
		t.Fatalf("a polled interruption of an instance still creating: report %d interrupted, instance %+v; want it marked", rep.Interrupted, got)
	}
}

// rewrite changes a stored instance by compare-and-set, keeping its
// status, as a webhook's write would.
func rewrite(w *enginetest.World, name string, change func(*runner.Instance)) error {
	ctx := context.Background()
	cur, err := w.Store.GetInstance(ctx, name)
	if err != nil {
		return err
	}
	next := cur.Clone()
	change(next)
	return w.Store.UpdateInstance(ctx, cur.Status, next)
}
