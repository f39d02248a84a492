package lambdafn_test

import (
	"net/http"
	"testing"
	"time"

	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/runner"
)

// The worker builds an engine per invocation (for the invocation's
// logger), but what an engine remembers outlives it: a warm execution
// environment asks GitHub for the owner's runner downloads once, not on
// every create.
func TestWarmWorkerListsRunnerDownloadsOnce(t *testing.T) {
	s := newStack(t, stackOptions{})
	intake, worker := s.webhook(), s.worker()
	for _, job := range []int64{7000002001, 7000002002, 7000002003} {
		if status, reply := s.deliver(t, intake, functionURLEvent(t, jobPayload(t, runner.ActionQueued, job, ""))); status != http.StatusOK {
			t.Fatalf("queued %d: %d %+v", job, status, reply)
		}
		// One invocation per create, as a queue with one message at a time
		// delivers them.
		name := runner.InstanceName(linuxPool, job, 1)
		s.drain(t, worker, 10*time.Second, name+" running", s.hasStatus(name, runner.StatusRunning))
	}
	if got := s.gh.Calls(ghsim.OpRunnerDownloads); got != 1 {
		t.Fatalf("runner downloads listed %d times for 3 creates in one environment, want 1", got)
	}
}
