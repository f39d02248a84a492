package lambdafn_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// documentedInstance is the instance id in AWS's documented example events
// (internal/lambdafn/work/testdata).
const documentedInstance = "i-1234567890abcdef0"

// awsEvent is one of AWS's documented EC2 events, as EventBridge puts it
// on the work queue, about the machine with providerID.
func awsEvent(t testing.TB, file, providerID string) string {
	t.Helper()
	raw, err := os.ReadFile("work/testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(raw), documentedInstance, providerID)
}

// The acceptance case on Lambda: EC2's interruption warning reaches the
// worker through the work queue (twice: EventBridge delivers at least
// once), the job fails on the machine and its completed webhook comes
// twice, and GitHub re-runs the job exactly once. A warning about a
// machine of another stack is logged and ignored.
func TestSpotInterruptionEventReRunsTheJobOnce(t *testing.T) {
	s := newStack(t, stackOptions{})
	intake, worker := s.webhook(), s.worker()
	const id = 7000000501
	name := s.queue(t, intake, id, "x64")
	s.drain(t, worker, 20*time.Second, "the instance runs", s.hasStatus(name, runner.StatusRunning))
	inst := s.instance(t, name)
	s.gh.StartJob(id, name)
	if status, reply := s.deliver(t, intake, functionURLEvent(t, jobPayload(t, runner.ActionInProgress, id, name))); status != http.StatusOK {
		t.Fatalf("in_progress: %d %+v", status, reply)
	}

	warning := awsEvent(t, "ec2-spot-instance-interruption-warning.json", inst.ProviderID)
	s.send(t, warning)
	s.send(t, warning)
	foreign := s.send(t, awsEvent(t, "ec2-spot-instance-interruption-warning.json", documentedInstance))
	s.drain(t, worker, 20*time.Second, "the instance is marked", func() bool {
		return s.instance(t, name).Interruption == runner.InterruptionSpot
	})
	s.drain(t, worker, 20*time.Second, "the foreign warning is handled", func() bool {
		return len(s.logs.Lines(t, map[string]any{"message_id": foreign, "result": "not_ours"})) == 1
	})

	s.gh.FinishJob(id, "failure")
	failed := jobPayload(t, runner.ActionCompleted, id, name)
	failed = []byte(strings.Replace(string(failed), `"conclusion": "success"`, `"conclusion": "failure"`, 1))
	for range 2 {
		if status, reply := s.deliver(t, intake, functionURLEvent(t, failed)); status != http.StatusOK {
			t.Fatalf("completed: %d %+v", status, reply)
		}
	}
	key := runner.JobKey(id, 1)
	s.drain(t, worker, 30*time.Second, "the re-run is recorded and the instance deleted", func() bool {
		job, err := s.store.GetJob(context.Background(), key)
		return err == nil && job.Status == runner.JobClosed && s.instance(t, name).Status == runner.StatusDeleted
	})
	// Whatever is still queued (a redelivered warning, the delete's own
	// re-send of the re-run) finds the job closed.
	s.poll(t, worker, time.Second)
	if n := s.gh.Reruns(id); n != 1 {
		t.Fatalf("GitHub re-ran the job %d times, want exactly 1", n)
	}
	job, err := s.store.GetJob(context.Background(), key)
	if err != nil || job.RerunOutcome != runner.RerunDone || job.RerunCalls != 1 {
		t.Fatalf("job = %+v, %v; want one recorded call, done", job, err)
	}
}

// An EC2 event the rule should never have sent (another detail-type) is
// logged as not acted on and acknowledged; a rebalance recommendation is
// recorded on the instance and nothing else happens.
func TestOtherEC2EventsAreAcknowledged(t *testing.T) {
	s := newStack(t, stackOptions{})
	intake, worker := s.webhook(), s.worker()
	name := s.queue(t, intake, 7000000601, "x64")
	s.drain(t, worker, 20*time.Second, "the instance runs", s.hasStatus(name, runner.StatusRunning))
	inst := s.instance(t, name)

	rebalance := s.send(t, awsEvent(t, "ec2-instance-rebalance-recommendation.json", inst.ProviderID))
	other := s.send(t, strings.Replace(awsEvent(t, "ec2-instance-rebalance-recommendation.json", inst.ProviderID),
		"EC2 Instance Rebalance Recommendation", "EC2 Instance State-change Notification", 1))
	_, resp := s.poll(t, worker, 5*time.Second)
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("batch item failures %v, want none", resp.BatchItemFailures)
	}
	s.drain(t, worker, 10*time.Second, "both events handled", func() bool {
		return len(s.logs.Lines(t, map[string]any{"message_id": rebalance, "result": "marked"})) == 1 &&
			len(s.logs.Lines(t, map[string]any{"message_id": other, "level": "ERROR"})) == 1
	})
	if got := s.instance(t, name); got.Interruption != runner.InterruptionRebalance || got.Status != runner.StatusRunning {
		t.Fatalf("instance after a rebalance recommendation: %+v", got)
	}
}
