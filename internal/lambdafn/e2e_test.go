package lambdafn_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/lambdafn/work"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/webhook"
	"github.com/runfleet/runfleet/providers/simulated"
)

// A job's whole life through the Lambda handlers and real AWS-protocol
// servers: the webhook function's Function URL event lands a message in the
// SQS queue, the message comes back out of SQS as the worker's SQS event,
// and the instance moves through DynamoDB to a simulated machine and back.
func TestJobLifecycleThroughWebhookQueueAndWorker(t *testing.T) {
	s := newStack(t, stackOptions{})
	intake, worker := s.webhook(), s.worker()
	const jobID = 7000000101
	name := runner.InstanceName(linuxPool, jobID, 1)

	status, reply := s.deliver(t, intake, functionURLEvent(t, jobPayload(t, runner.ActionQueued, jobID, "")))
	if status != http.StatusOK || reply.Outcome == nil || reply.Result != engine.ResultCreated || reply.Instance != name {
		t.Fatalf("queued: %d %+v, want 200 with %s for %s", status, reply, engine.ResultCreated, name)
	}
	if got := s.instance(t, name).Status; got != runner.StatusPendingCreate {
		t.Fatalf("after queued: status %s, want pending_create", got)
	}

	records, resp := s.poll(t, worker, 5*time.Second)
	if len(records) != 1 || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("create: %d records, failures %v; want the one create message, handled", len(records), resp.BatchItemFailures)
	}
	if !strings.Contains(records[0].Body, `"kind":"create"`) || !strings.Contains(records[0].Body, name) {
		t.Fatalf("message on the queue = %s, want a create for %s", records[0].Body, name)
	}
	inst := s.instance(t, name)
	if inst.Status != runner.StatusRunning || inst.ProviderID == "" || inst.GitHubRunnerID == 0 {
		t.Fatalf("after create: %+v, want running with a provider id and a GitHub runner", inst)
	}
	machines := s.simulated(linuxPool).Machines()
	if len(machines) != 1 || machines[0].ProviderID != inst.ProviderID {
		t.Fatalf("machines = %+v, want the one for %s", machines, inst.ProviderID)
	}
	if runners := s.gh.Runners(); len(runners) != 1 || runners[0].Name != name {
		t.Fatalf("GitHub runners = %+v, want %s", runners, name)
	}

	status, reply = s.deliver(t, intake, functionURLEvent(t, jobPayload(t, runner.ActionInProgress, jobID, name)))
	if status != http.StatusOK || reply.Result != engine.ResultBound {
		t.Fatalf("in_progress: %d %+v", status, reply)
	}
	if inst := s.instance(t, name); inst.RunnerStatus != runner.RunnerActive || inst.ActiveJobID != jobID {
		t.Fatalf("after in_progress: runner %s job %d, want active on %d", inst.RunnerStatus, inst.ActiveJobID, jobID)
	}

	status, reply = s.deliver(t, intake, functionURLEvent(t, jobPayload(t, runner.ActionCompleted, jobID, name)))
	if status != http.StatusOK || reply.Result != engine.ResultDeleteScheduled {
		t.Fatalf("completed: %d %+v", status, reply)
	}
	s.drain(t, worker, 10*time.Second, name+" deleted", s.hasStatus(name, runner.StatusDeleted))
	if machines := s.simulated(linuxPool).Machines(); len(machines) != 0 {
		t.Fatalf("machines after delete = %+v, want none", machines)
	}
	if runners := s.gh.Runners(); len(runners) != 0 {
		t.Fatalf("GitHub runners after delete = %+v, want none", runners)
	}
	if visible, inFlight, delayed := s.queueDepth(t); visible+inFlight+delayed != 0 {
		t.Fatalf("queue after the job: %d visible, %d in flight, %d delayed; want empty", visible, inFlight, delayed)
	}

	// Every line the engine wrote while a function handled this job names
	// the Lambda request it belongs to.
	for _, msg := range []string{"instance admitted for job", "instance created", "runner bound to job", "instance deleted"} {
		lines := s.logs.Lines(t, map[string]any{"msg": msg, "instance": name})
		if len(lines) == 0 {
			t.Errorf("no %q log line", msg)
		}
		for _, l := range lines {
			if id, _ := l["aws_request_id"].(string); !strings.HasPrefix(id, "req-") {
				t.Errorf("%q line without aws_request_id: %v", msg, l)
			}
		}
	}
}

// An ordinary delete whose provider fails is put back to pending_delete and
// re-sent with DelaySeconds doubling from engine.delete_backoff_min (1 s),
// and completes once the provider recovers.
func TestFailedDeleteIsResentWithGrowingDelays(t *testing.T) {
	s := newStack(t, stackOptions{})
	intake, worker := s.webhook(), s.worker()
	name := s.runJob(t, intake, worker, 7000000201)

	provider := s.simulated(linuxPool)
	provider.SetFaults(simulated.Faults{AlwaysFailDelete: true})
	if status, reply := s.deliver(t, intake, functionURLEvent(t, jobPayload(t, runner.ActionCompleted, 7000000201, name))); status != http.StatusOK {
		t.Fatalf("completed: %d %+v", status, reply)
	}

	const failures = 3
	s.drain(t, worker, 20*time.Second, name+" deleted", func() bool {
		inst := s.instance(t, name)
		if inst.Attempts >= failures && provider.Faults().AlwaysFailDelete {
			if inst.Status != runner.StatusPendingDelete || inst.ProviderFault == "" || !inst.NextAttemptAt.After(inst.UpdatedAt) {
				t.Fatalf("a failing delete must stay visibly retrying: %+v", inst)
			}
			provider.SetFaults(simulated.Faults{})
		}
		return inst.Status == runner.StatusDeleted
	})

	var delays []time.Duration
	for _, m := range s.sends.matching(`"kind":"delete"`, name) {
		delays = append(delays, m.delay)
	}
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second}
	if !slices.Equal(delays, want) {
		t.Fatalf("delete messages sent with delays %v, want %v (the first from the completed webhook)", delays, want)
	}
	if calls := provider.DeleteCalls(name); calls != failures+1 {
		t.Fatalf("provider delete called %d times, want %d", calls, failures+1)
	}
	if inst := s.instance(t, name); inst.Attempts != failures {
		t.Fatalf("deleted instance records %d attempts, want %d", inst.Attempts, failures)
	}
}

// runJob takes job id through queued and its create, returning the running
// instance's name.
func (s *stack) runJob(t testing.TB, intake lambdafn.FunctionURLHandler, worker work.SQSHandler, jobID int64) string {
	t.Helper()
	name := runner.InstanceName(linuxPool, jobID, 1)
	status, reply := s.deliver(t, intake, functionURLEvent(t, jobPayload(t, runner.ActionQueued, jobID, "")))
	if status != http.StatusOK || reply.Status != webhook.StatusProcessed {
		t.Fatalf("queued %d: %d %+v", jobID, status, reply)
	}
	s.drain(t, worker, 10*time.Second, name+" running", s.hasStatus(name, runner.StatusRunning))
	return name
}
