package enginetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// Patience is how long Eventually waits. It is generous: tests assert
// behaviour, not speed, on a shared machine.
const Patience = time.Minute

const pollEvery = 10 * time.Millisecond

// Eventually polls cond until it holds, and fails the test naming what was
// awaited if it does not within Patience; explain, when given, adds what
// helps to see why (the end of a log).
func Eventually(tb testing.TB, what string, cond func() bool, explain ...func() string) {
	tb.Helper()
	deadline := time.Now().Add(Patience)
	for !cond() {
		if time.Now().After(deadline) {
			msg := "timed out waiting for " + what
			for _, f := range explain {
				msg += "\n" + f()
			}
			tb.Fatal(msg)
		}
		time.Sleep(pollEvery)
	}
}

// WaitFor is Eventually with the end of the world's log on failure.
func (w *World) WaitFor(what string, cond func() bool) {
	w.TB.Helper()
	Eventually(w.TB, what, cond, func() string { return "log:\n" + w.Logs.Tail(40) })
}

// WaitStatus waits for instance name to reach status want and returns it.
func (w *World) WaitStatus(name string, want runner.Status) *runner.Instance {
	w.TB.Helper()
	var last *runner.Instance
	w.WaitFor(fmt.Sprintf("%s to reach %s", name, want), func() bool {
		inst, err := w.Store.GetInstance(context.Background(), name)
		if err != nil {
			return false
		}
		last = inst
		return inst.Status == want
	})
	return last
}

// Instance reads instance name, failing the test if it cannot.
func (w *World) Instance(name string) *runner.Instance {
	w.TB.Helper()
	inst, err := w.Store.GetInstance(context.Background(), name)
	if err != nil {
		w.TB.Fatalf("read instance %s: %v", name, err)
	}
	return inst
}

// Live reads the live instances, failing the test if it cannot.
func (w *World) Live() []*runner.Instance {
	w.TB.Helper()
	live, err := w.Store.ListLiveInstances(context.Background())
	if err != nil {
		w.TB.Fatalf("list live instances: %v", err)
	}
	return live
}

// Job reads the ledger record of job id's first run attempt, failing the
// test if it cannot.
func (w *World) Job(id int64) *runner.Job {
	w.TB.Helper()
	job, err := w.Store.GetJob(context.Background(), runner.JobKey(id, 1))
	if err != nil {
		w.TB.Fatalf("read job %d: %v", id, err)
	}
	return job
}
