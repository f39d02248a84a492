package enginetest_test

import (
	"fmt"
	"testing"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
)

// A restart loses the process's memory and nothing else: the store, the
// installation id (so the pools' provider-side ids), the machines and
// GitHub's runners are the ones from before.
func TestRestartKeepsWhatOutlivesTheProcess(t *testing.T) {
	for _, separate := range []bool{false, true} {
		t.Run(fmt.Sprintf("separate queue %v", separate), func(t *testing.T) {
			w := enginetest.NewWorld(t, enginetest.Options{SeparateQueue: separate})
			w.StartWorkers(1)
			name := w.RunJob(1)
			poolID, engine := w.PoolID(enginetest.Pool), w.Engine
			w.Restart()
			if w.Engine == engine || w.PoolID(enginetest.Pool) != poolID {
				t.Fatalf("after a restart: a new engine %t, pool id %s (was %s)", w.Engine != engine, w.PoolID(enginetest.Pool), poolID)
			}
			if inst := w.Instance(name); inst.Status != runner.StatusRunning {
				t.Fatalf("instance after a restart: %s", inst.Status)
			}
			if len(w.Provider.Machines()) != 1 || len(w.GitHub.Runners()) != 1 {
				t.Fatal("the machine or the runner did not outlive the process")
			}
			w.Deliver(enginetest.Event(runner.ActionCompleted, 1, name))
			w.Drain()
			if inst := w.Instance(name); inst.Status != runner.StatusDeleted {
				t.Fatalf("after the drain: %s, want deleted", inst.Status)
			}
		})
	}
}

// The recorder keeps the order of calls, and a create it fails after the
// machine was made leaves the machine, as a cloud's late failure does.
func TestRecorderFailsCreatesEarlyOrLate(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	w.Recorder.FailCreates(1, true)
	w.StartWorkers(1)
	name := w.RunJob(2)
	want := fmt.Sprint([]string{"create " + name, "delete " + name, "create " + name})
	if got := fmt.Sprint(w.Recorder.Calls()); got != want {
		t.Fatalf("calls %s, want %s", got, want)
	}
	if reqs := w.Recorder.Requests(name); len(reqs) != 2 || reqs[1].PoolID != w.PoolID(enginetest.Pool) {
		t.Fatalf("create requests %+v", reqs)
	}
}
