package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
)

// Found by TestSimulationScaleSet (F21): GitHub also sends webhooks about
// a scale set's jobs, under the REST job id. The in_progress webhook
// naming a scale-set pool's runner bound the runner to that REST id — a
// second name for the job the listener holds under its runner request —
// so the runner looked taken by another job, the job was given a second
// instance, and the scale set's own JobStarted then bound the first:
// two instances for one job. A scale-set pool's runner is bound and
// released only by its scale set's events.
func TestWebhooksAboutAScaleSetRunnerLeaveItsInstanceAlone(t *testing.T) {
	const scaleSet = "linux-set"
	w := enginetest.NewWorld(t, enginetest.Options{Pools: enginetest.OnePool(func(p *runner.Pool) { p.ScaleSet = scaleSet })})
	ctx := context.Background()
	const ledgerID = int64(1)<<62 | 7014 // the listener's id for runner request 7014
	queued := runner.JobEvent{Action: runner.ActionQueued, JobID: ledgerID, RunID: 10, RunAttempt: 1, Labels: []string{scaleSet}, Pool: enginetest.Pool}
	meta := engine.EventMeta{Source: "scaleset", Key: "scaleset:42:1"}
	if _, err := w.Engine.HandleJobEvent(ctx, queued, meta); err != nil {
		t.Fatal(err)
	}
	w.Drain()
	name := runner.InstanceName(enginetest.Pool, ledgerID, 1)
	inst := w.Instance(name)
	if inst.Status != runner.StatusRunning {
		t.Fatalf("the scale-set job's instance: %+v", inst)
	}
	for _, action := range []runner.JobAction{runner.ActionInProgress, runner.ActionCompleted} {
		ev := enginetest.Event(action, 1018, name) // the REST job id, the scale set's name as runs-on
		ev.Labels, ev.RunnerID = []string{scaleSet}, inst.GitHubRunnerID
		if action == runner.ActionCompleted {
			ev.Conclusion = "success"
		}
		w.Deliver(ev)
		w.Drain()
		if got := w.Instance(name); got.Status != runner.StatusRunning || got.ActiveJobID != 0 || got.RunnerStatus == runner.RunnerActive || got.RunnerStatus == runner.RunnerTerminated {
			t.Fatalf("after the webhook's %s: %+v; want the instance untouched", action, got)
		}
	}
	started := queued
	started.Action, started.RunnerName, started.RunnerID = runner.ActionInProgress, name, inst.GitHubRunnerID
	if _, err := w.Engine.HandleJobEvent(ctx, started, engine.EventMeta{Source: "scaleset", Key: "scaleset:42:2"}); err != nil {
		t.Fatal(err)
	}
	if got := w.Instance(name); got.ActiveJobID != ledgerID || got.RunnerStatus != runner.RunnerActive {
		t.Fatalf("after the scale set's JobStarted: %+v; want it bound to the job", got)
	}
}

// Found by TestSimulationScaleSet (F24): a scale-set job recorded waiting
// (a JobCompleted, canceled, with no runner) was "rechecked" by the
// reconciler after ten minutes — but GitHub's REST API cannot be asked
// about a runner request, the answer was empty, and an empty answer
// reopened the job: a job GitHub had canceled for good got runner after
// runner, each reaped idle, until it expired. Only its scale set reopens
// such a job (JobAssigned); the listener's statistics close it.
func TestAWaitingScaleSetJobIsNotReopenedWithoutGitHubsWord(t *testing.T) {
	clock := testclock.At(time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC))
	w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now, Pools: enginetest.OnePool(func(p *runner.Pool) { p.ScaleSet = "linux-set" })})
	ctx := context.Background()
	const ledgerID = int64(1)<<62 | 7006
	ev := runner.JobEvent{Action: runner.ActionQueued, JobID: ledgerID, RunID: 10, RunAttempt: 1, Labels: []string{"linux-set"}, Pool: enginetest.Pool}
	if _, err := w.Engine.HandleJobEvent(ctx, ev, engine.EventMeta{Source: "scaleset", Key: "scaleset:41:11"}); err != nil {
		t.Fatal(err)
	}
	ev.Action = runner.ActionWaiting // the listener's reading of a canceled assignment
	if _, err := w.Engine.HandleJobEvent(ctx, ev, engine.EventMeta{Source: "scaleset", Key: "scaleset:41:13"}); err != nil {
		t.Fatal(err)
	}
	w.Drain()
	for range 3 {
		clock.Advance(11 * time.Minute)
		if _, err := w.Engine.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		w.Drain()
		job, err := w.Store.GetJob(ctx, runner.JobKey(ledgerID, 1))
		if err != nil {
			t.Fatal(err)
		}
		if job.Status != runner.JobWaiting {
			t.Fatalf("the waiting scale-set job after a reconcile pass: %s (made %d); want still waiting", job.Status, job.Made)
		}
	}
}
