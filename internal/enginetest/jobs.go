package enginetest

import (
	"context"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// The world's defaults: who runs it, where its jobs come from and the pool
// that serves them.
const (
	Controller = "test-ctl"
	Pool       = "linux-x64"
	Owner      = "octo-org"
	Repository = "octo-org/hello-world"
	// Installation is the GitHub App installation the jobs' deliveries
	// name.
	Installation int64 = 42
)

// Labels are the labels of the default pool and of the jobs Event makes.
func Labels() []string { return []string{"self-hosted", "linux", "x64"} }

// OnePool is the default pool, changed by adjust when it is not nil: Pool,
// of Owner, for Labels, up to 10 runners. Its bootstrap timeout, a minute,
// is far beyond any test's pace, so that no runner is reaped as "never came
// online" because the machine running the test is slow.
func OnePool(adjust func(*runner.Pool)) runner.Pools {
	p := runner.Pool{Name: Pool, Owner: runner.Owner{Org: Owner}, Labels: Labels(), MaxRunners: 10, BootstrapTimeout: time.Minute}
	if adjust != nil {
		adjust(&p)
	}
	return runner.Pools{p}
}

// Event is what an intake learns about job id of Repository, with the
// default pool's labels; runnerName is the runner that took it ("" while
// queued).
func Event(action runner.JobAction, id int64, runnerName string) runner.JobEvent {
	return runner.JobEvent{
		Action: action, JobID: id, RunID: id * 10, RunAttempt: 1, Labels: Labels(),
		Repository: Repository, Org: Owner, InstallationID: Installation, RunnerName: runnerName,
	}
}

// InstanceName is the first instance made for job id in the default pool.
func InstanceName(id int64) string { return runner.InstanceName(Pool, id, 1) }

// Deliver hands the engine's intake port one job event as a new webhook
// delivery (engine.Webhook) and fails the test if it fails. Call it from
// the test's goroutine.
func (w *World) Deliver(ev runner.JobEvent) engine.Outcome {
	w.TB.Helper()
	id := fmt.Sprintf("delivery-%d", w.deliveries.Add(1))
	out, err := w.Engine.HandleJobEvent(context.Background(), ev, engine.Webhook(id))
	if err != nil {
		w.TB.Fatalf("%s of job %d (%s): %v", ev.Action, ev.JobID, id, err)
	}
	return out
}

// RunJob queues job id in the default pool and waits for its instance to
// run (workers must be running); it returns the instance's name.
func (w *World) RunJob(id int64) string {
	w.TB.Helper()
	w.Deliver(Event(runner.ActionQueued, id, ""))
	name := InstanceName(id)
	w.WaitStatus(name, runner.StatusRunning)
	return name
}
