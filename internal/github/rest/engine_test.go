package rest_test

// Engine-level tests: the real engine, runfleet's GitHub client and the fake
// GitHub answering as GitHub does (lessons-from-peers P9, P10 and the
// rate-limit and 409 behaviour of github-semantics.md).

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers/simulated"
)

// An ephemeral runner's whole life costs two GitHub calls: the JIT config
// and the remove (a 404: the runner removed itself after its job). The
// runner downloads offered to machines are listed once per owner and hour,
// not per job.
func TestJobLifecycleCostsTwoGitHubCalls(t *testing.T) {
	w := newWorld(t, worldOptions{})
	for _, id := range []int64{101, 102, 103} {
		w.lifecycle(id)
		if len(w.Provider.Machines()) != 0 {
			t.Fatalf("job %d: machine left behind", id)
		}
	}
	calls := w.gh.Calls()
	if calls.API() != 7 || calls.ByOperation[rest.OpGenerateJITConfig] != 3 || calls.ByOperation[rest.OpRemoveRunner] != 3 ||
		calls.ByOperation[rest.OpListRunnerDownloads] != 1 {
		t.Fatalf("calls %+v, want 2 per job and 1 downloads listing", calls)
	}
	if got := w.fake.APICallCount(); got != 7 {
		t.Fatalf("GitHub answered %d API calls, want 7", got)
	}
	if got := w.fake.CallCount(githubtest.RouteAccessTokens); got != 1 {
		t.Errorf("token mints = %d, want 1 (the installation's client is reused)", got)
	}
	if inst := w.Instance(enginetest.InstanceName(101)); inst.GitHubRunnerID == 0 || inst.ProviderFault != "" {
		t.Errorf("deleted instance %+v", inst)
	}
}

// P9: a runner GitHub reports busy (422) is never destroyed by a normal
// delete. Once the job's completed is recorded a 422 is GitHub a moment
// behind its own webhook (issue #32), so the delete comes back on the
// ordinary backoff, never later than 15 s, instead of waiting
// delete_backoff_max — backing off, never by force; the job's completed
// re-sends it at once, and then the machine goes.
func TestBusyRunnersMachineIsNeverDestroyed(t *testing.T) {
	w := newWorld(t, worldOptions{deleteBackoffMax: time.Minute})
	const jobID = 201
	name := enginetest.InstanceName(jobID)
	w.deliver(runner.ActionQueued, jobID, "")
	w.WaitStatus(name, runner.StatusRunning)
	w.startJob(jobID)

	// A completed webhook arrives while GitHub still has the runner busy
	// (an early or misattributed delivery).
	w.deliver(runner.ActionCompleted, jobID, name)
	w.WaitFor("the busy delete to be put back", func() bool {
		inst := w.Instance(name)
		return inst.Status == runner.StatusPendingDelete && inst.Attempts >= 1
	})
	inst := w.Instance(name)
	if wait := inst.NextAttemptAt.Sub(inst.UpdatedAt); wait > 15*time.Second {
		t.Errorf("busy delete after a completed retries in %s; want the ordinary backoff, at most 15 s", wait)
	}
	if !strings.Contains(inst.ProviderFault, "still running a job") {
		t.Errorf("instance %+v", inst)
	}
	time.Sleep(300 * time.Millisecond) // room for the retries the backoff allows
	// From 20 ms doubling, 300 ms hold at most 5 attempts: backing off, not
	// hammering. (A slower machine makes fewer, never more.)
	if got := len(w.callsAt(githubtest.RouteOrgRemoveRunner)); got < 1 || got > 6 {
		t.Fatalf("remove calls while busy = %d, want 1 to 6 (the backoff's)", got)
	}
	if w.Provider.DeleteCalls(name) != 0 || len(w.Provider.Machines()) != 1 {
		t.Fatal("the busy runner's machine was touched")
	}
	// An operator's ordinary delete is refused at once, too.
	if _, err := w.Engine.RequestDelete(context.Background(), name); !errors.Is(err, github.ErrRunnerBusy) {
		t.Fatalf("operator delete: %v, want ErrRunnerBusy", err)
	}
	if w.Provider.DeleteCalls(name) != 0 {
		t.Fatal("the operator's ordinary delete destroyed the machine")
	}

	// The job ends: the JIT runner removes itself and GitHub (re)delivers
	// completed, which re-sends the delete at once.
	w.fake.FinishRunner(name)
	w.deliver(runner.ActionCompleted, jobID, name)
	w.WaitStatus(name, runner.StatusDeleted)
	if w.Provider.DeleteCalls(name) != 1 || len(w.Provider.Machines()) != 0 {
		t.Fatalf("machine deletes %d, machines %d", w.Provider.DeleteCalls(name), len(w.Provider.Machines()))
	}
	if got := len(w.callsAt(githubtest.RouteOrgRemoveRunner)); got < 3 {
		t.Errorf("remove calls = %d, want at least 3 (busy, operator, after the job)", got)
	}
}

// A delete that meets a rate limit is re-sent no earlier than GitHub said:
// the reset time of a primary limit, the retry-after of a secondary one.
func TestRateLimitedDeleteIsResentAfterTheLimit(t *testing.T) {
	cases := []struct {
		name  string
		fault func() (githubtest.Fault, time.Time) // the fault and the earliest retry
	}{
		{"primary 403 until x-ratelimit-reset", func() (githubtest.Fault, time.Time) {
			reset := time.Now().Truncate(time.Second).Add(2 * time.Second)
			return githubtest.PrimaryRateLimit(reset).Times(1), reset
		}},
		{"primary 429 until x-ratelimit-reset", func() (githubtest.Fault, time.Time) {
			reset := time.Now().Truncate(time.Second).Add(2 * time.Second)
			f := githubtest.PrimaryRateLimit(reset).Times(1)
			f.Status = 429
			return f, reset
		}},
		{"secondary 429 retry-after", func() (githubtest.Fault, time.Time) {
			return githubtest.TooManyRequests(time.Second).Times(1), time.Now().Add(time.Second)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, worldOptions{})
			const jobID = 301
			name := enginetest.InstanceName(jobID)
			w.deliver(runner.ActionQueued, jobID, "")
			w.WaitStatus(name, runner.StatusRunning)
			w.startJob(jobID)
			w.fake.FinishRunner(name)

			fault, earliest := tc.fault()
			w.fake.Inject(githubtest.RouteOrgRemoveRunner, fault)
			w.deliver(runner.ActionCompleted, jobID, name)
			w.WaitFor("the rate-limited delete to be put back", func() bool {
				inst := w.Instance(name)
				return inst.Status == runner.StatusPendingDelete && inst.Attempts == 1 || inst.Status == runner.StatusDeleted
			})
			inst := w.Instance(name)
			if inst.Status == runner.StatusDeleted {
				t.Fatal("the delete went through despite the rate limit")
			}
			if inst.NextAttemptAt.Before(earliest) {
				t.Errorf("NextAttemptAt %s is before the limit lifts at %s", inst.NextAttemptAt, earliest)
			}
			if !strings.Contains(inst.ProviderFault, "rate limit") {
				t.Errorf("fault %q does not say rate limit", inst.ProviderFault)
			}
			if w.Provider.DeleteCalls(name) != 0 {
				t.Fatal("the machine was deleted before its runner was removed")
			}
			w.WaitStatus(name, runner.StatusDeleted)
			removes := w.callsAt(githubtest.RouteOrgRemoveRunner)
			if len(removes) != 2 {
				t.Fatalf("remove calls = %d, want 2 (limited, then after it)", len(removes))
			}
			if removes[1].Time.Before(inst.NextAttemptAt) {
				t.Errorf("re-sent at %s, before %s", removes[1].Time, inst.NextAttemptAt)
			}
		})
	}
}

// GitHub registered the runner yet answered 502; the engine's retry meets
// 409 for that runner of ours, which the client removes before registering
// again. One runner, one machine.
func TestNameConflictRecoveredThroughTheEngine(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.fake.Inject(githubtest.RouteOrgJITConfig, githubtest.ServerError(502).Times(1).AndApply())
	const jobID = 401
	name := enginetest.InstanceName(jobID)
	w.deliver(runner.ActionQueued, jobID, "")
	inst := w.WaitStatus(name, runner.StatusRunning)
	r, ok := w.fake.RunnerByName(name)
	if !ok || r.ID != inst.GitHubRunnerID {
		t.Fatalf("registered %+v, instance has runner id %d", r, inst.GitHubRunnerID)
	}
	if len(w.fake.Runners()) != 1 || w.Provider.CreateCalls(name) != 1 {
		t.Fatalf("runners %d, machine creates %d", len(w.fake.Runners()), w.Provider.CreateCalls(name))
	}
	if jit, removes := len(w.callsAt(githubtest.RouteOrgJITConfig)), len(w.callsAt(githubtest.RouteOrgRemoveRunner)); jit != 3 || removes != 1 {
		t.Errorf("JIT calls %d (502, 409, success), removes %d", jit, removes)
	}
	if len(w.Logs.WithMessage(t, "removed a stale runner")) != 1 {
		t.Error("the stale runner's removal is not logged")
	}
}

// P10: a JIT runner whose machine was never created is removed from GitHub.
func TestLeakedJITRunnersAreRemoved(t *testing.T) {
	w := newWorld(t, worldOptions{faults: simulated.Faults{AlwaysFailCreate: true}})
	const jobID = 501
	name := enginetest.InstanceName(jobID)
	w.deliver(runner.ActionQueued, jobID, "")
	inst := w.WaitStatus(name, runner.StatusDeleted)
	if got := w.Provider.CreateCalls(name); got != 3 {
		t.Fatalf("create attempts = %d, want 3", got)
	}
	if left := w.fake.Runners(); len(left) != 0 {
		t.Fatalf("JIT runners left at GitHub: %+v", left)
	}
	jits := w.callsAt(githubtest.RouteOrgJITConfig)
	if len(jits) != 3 {
		t.Fatalf("JIT configs = %d, want 3", len(jits))
	}
	removed := 0
	for _, c := range w.callsAt(githubtest.RouteOrgRemoveRunner) {
		if c.Status == 204 {
			removed++
		}
	}
	if removed != 3 {
		t.Errorf("runners removed = %d, want one per failed create", removed)
	}
	if inst.ProviderFault == "" {
		t.Error("the failure is not recorded")
	}
}

// A 403 that is not a rate limit is a permission problem, and the instance
// and the logs say which permission.
func TestPermissionErrorIsReportedClearly(t *testing.T) {
	w := newWorld(t, worldOptions{})
	w.fake.Inject(githubtest.RouteOrgJITConfig, githubtest.Forbidden())
	const jobID = 601
	name := enginetest.InstanceName(jobID)
	w.deliver(runner.ActionQueued, jobID, "")
	w.WaitFor("the create to fail", func() bool { return w.Instance(name).ProviderFault != "" })
	inst := w.Instance(name)
	for _, want := range []string{"forbidden", "Resource not accessible by integration", `"Self-hosted runners: Read and write"`} {
		if !strings.Contains(inst.ProviderFault, want) {
			t.Errorf("instance fault %q does not say %q", inst.ProviderFault, want)
		}
	}
	w.WaitFor("the failure to be logged", func() bool { return len(w.Logs.WithMessage(t, "create failed")) > 0 })
	line := w.Logs.WithMessage(t, "create failed")[0]
	if s, _ := line["error"].(string); !strings.Contains(s, "Self-hosted runners") {
		t.Errorf("log line %v does not name the permission", line)
	}
	if w.Provider.CreateCalls(name) != 0 {
		t.Error("a machine was made without a runner registration")
	}
	w.WaitStatus(name, runner.StatusDeleted)
}
