package engine_test

import (
	"context"
	"testing"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
)

// Found by make sim (seed 11225 at 4a2e5f7): an instance's first runner
// ran another job, whose in_progress and completed were lost; the process
// died and recovery retried the create, registering a NEW runner under the
// same name. The first runner's in_progress, recovered late from the
// delivery log, then bound the new runner to the finished job: the
// instance looked busy, the reconciler made its job a replacement, and the
// new runner took the job too — two instances for one job. An event names
// its runner's registration (runner_id): one about an earlier
// registration binds, and deletes, nothing.
func TestEventsAboutAnEarlierRegistrationOfTheNameLeaveTheInstanceAlone(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	w.Deliver(enginetest.Event(runner.ActionQueued, 6000, "")) // a runner registered before
	w.Deliver(enginetest.Event(runner.ActionQueued, 6001, ""))
	w.Drain()
	name := enginetest.InstanceName(6001)
	inst := w.Instance(name)
	if inst.Status != runner.StatusRunning || inst.GitHubRunnerID < 2 {
		t.Fatalf("instance after its create: %+v", inst)
	}
	earlier := inst.GitHubRunnerID - 1 // GitHub numbers runners in order
	for _, action := range []runner.JobAction{runner.ActionInProgress, runner.ActionCompleted} {
		ev := enginetest.Event(action, 6002, name)
		ev.RunnerID = earlier
		if action == runner.ActionCompleted {
			ev.Conclusion = "success"
		}
		w.Deliver(ev)
		w.Drain()
		if got := w.Instance(name); got.Status != runner.StatusRunning || got.ActiveJobID != 0 || got.RunnerStatus == runner.RunnerActive || got.RunnerStatus == runner.RunnerTerminated {
			t.Fatalf("after the earlier registration's %s: %+v; want the instance untouched", action, got)
		}
	}
	ev := enginetest.Event(runner.ActionInProgress, 6001, name)
	ev.RunnerID = inst.GitHubRunnerID
	w.Deliver(ev)
	if got := w.Instance(name); got.ActiveJobID != 6001 || got.RunnerStatus != runner.RunnerActive {
		t.Fatalf("after its own runner's in_progress: %+v; want it bound to job 6001", got)
	}
}

// Found by make sim (seed 14613 at 4a2e5f7): a create hung while its
// runner ran another job to its end; that job's completed marked the
// runner terminated; its in_progress, arriving after, made the runner
// "active" again, and the create was then retried — a new runner for an
// instance whose job had long been served elsewhere. A finished runner's
// late in_progress records which job it ran and nothing more.
func TestALateInProgressDoesNotReviveAFinishedRunner(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	ctx := context.Background()
	inst := putInState(t, w, 6101, runner.StatusCreating)
	completed := enginetest.Event(runner.ActionCompleted, 6102, inst.Name)
	completed.Conclusion = "success"
	w.Deliver(completed)
	if got := w.Instance(inst.Name); got.RunnerStatus != runner.RunnerTerminated {
		t.Fatalf("after the completed of the job its runner ran: %+v; want terminated", got)
	}
	w.Deliver(enginetest.Event(runner.ActionInProgress, 6102, inst.Name))
	got := w.Instance(inst.Name)
	if got.RunnerStatus != runner.RunnerTerminated || got.ActiveJobID != 6102 {
		t.Fatalf("after the late in_progress: %+v; want still terminated, with the job it ran recorded", got)
	}
	if err := w.Engine.RecoverAtStart(ctx); err != nil {
		t.Fatal(err)
	}
	w.Drain()
	if got := w.Instance(inst.Name); got.Status == runner.StatusPendingCreate || got.Status == runner.StatusCreating || got.Status == runner.StatusRunning {
		t.Fatalf("the finished runner's instance after recovery: %+v; want it on its way out, not created again", got)
	}
}

// Found by the simulation (seed 33448 at 4966bf5): a create cut off after
// its JIT registration left a runner GitHub knows and the record does not
// (no runner id); the runner took a job, and the delete — trusting the
// missing id to mean "never registered" — destroyed the machine without
// asking GitHub. A record without a runner id is asked about by name, and
// meets the busy guard (P9).
func TestDeleteOfARecordWithoutARunnerIDAsksGitHubByName(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	w.Deliver(enginetest.Event(runner.ActionQueued, 6201, ""))
	w.Drain()
	inst := w.Instance(enginetest.InstanceName(6201))
	w.GitHub.SetBusy(inst.Name, true)
	if err := rewrite(w, inst.Name, func(next *runner.Instance) {
		next.GitHubRunnerID, next.RunnerStatus = 0, runner.RunnerTerminated
	}); err != nil {
		t.Fatal(err)
	}
	w.Deliver(enginetest.Event(runner.ActionCompleted, 6201, ""))
	w.Drain()
	if got := w.Provider.DeleteCalls(inst.Name); got != 0 {
		t.Fatalf("the machine of a runner GitHub reports busy got %d delete calls", got)
	}
}
