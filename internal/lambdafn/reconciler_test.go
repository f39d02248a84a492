package lambdafn_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// The scheduled reconciler finds an instance whose create message was lost
// (admitted for its job two minutes ago, still pending_create, nothing on
// the queue), re-sends the create, and the worker then creates it.
func TestScheduledReconcileResendsALostCreate(t *testing.T) {
	s := newStack(t, stackOptions{})
	reconciler, worker := s.reconciler(), s.worker()
	admitted := time.Now().Add(-2 * time.Minute)
	job := &runner.Job{
		ID: 7000001001, RunAttempt: 1, Pool: linuxPool, Owner: runner.Owner{Org: "octo-org"}, Repository: "octo-org/app",
		Labels: []string{"self-hosted", "linux", "x64"}, Status: runner.JobOpen, Made: 1,
		QueuedAt: admitted, CreatedAt: admitted, UpdatedAt: admitted, StatusChangedAt: admitted,
	}
	job.Instance = job.InstanceFor(1)
	name := job.Instance
	err := s.store.CreateInstance(context.Background(), store.Admission{
		Instance: &runner.Instance{
			Name: name, Pool: linuxPool, Status: runner.StatusPendingCreate, RunnerStatus: runner.RunnerPending,
			JobID: job.ID, RunAttempt: 1, Owner: runner.Owner{Org: "octo-org"}, Labels: []string{"self-hosted", "linux", "x64"},
			CreatedAt: admitted, UpdatedAt: admitted, StatusChangedAt: admitted,
		},
		MaxRunners: 50,
		Job:        job,
	})
	if err != nil {
		t.Fatal(err)
	}

	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	ctx, id := s.invocation()
	report, err := reconciler(ctx, tick)
	if err != nil {
		t.Fatal(err)
	}
	if report.Examined != 1 || report.CreatesResent != 1 {
		t.Fatalf("report %+v, want 1 examined, 1 create re-sent", report)
	}
	lines := s.logs.Lines(t, map[string]any{"msg": "reconcile pass finished", "aws_request_id": id})
	if len(lines) != 1 || lines[0]["creates_resent"] != float64(1) || !strings.Contains(fmt.Sprint(lines[0]["schedule"]), "rule/runfleet-ReconcilerSchedule") {
		t.Fatalf("reconcile log lines %v, want one with the report and the schedule", lines)
	}

	s.drain(t, worker, 10*time.Second, name+" running", s.hasStatus(name, runner.StatusRunning))
}

// A live instance written by a release before the sharded live index is
// invisible to the lists; the scheduled reconciler moves it into the index
// before its pass, so the pass (and every list after it) sees it.
func TestScheduledReconcileMovesLegacyLiveInstances(t *testing.T) {
	s := newStack(t, stackOptions{})
	reconciler := s.reconciler()
	ctx := context.Background()
	now := time.Now()
	name := runner.InstanceName(linuxPool, 7000001002, 1)
	err := s.store.CreateInstance(ctx, store.Admission{
		Instance: &runner.Instance{
			Name: name, Pool: linuxPool, Status: runner.StatusRunning, RunnerStatus: runner.RunnerIdle,
			ProviderID: "sim-legacy", JobID: 7000001002, RunAttempt: 1, Owner: runner.Owner{Org: "octo-org"},
			Labels: []string{"self-hosted", "linux", "x64"}, CreatedAt: now, UpdatedAt: now, StatusChangedAt: now,
		},
		MaxRunners: 50,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The item as the unsharded release stored it.
	_, err = s.ddb.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:        aws.String(s.env.Table),
		Key:              map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "INSTANCE#" + name}},
		UpdateExpression: aws.String("SET is_live = :yes REMOVE live_shard, live_sort"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":yes": &ddbtypes.AttributeValueMemberS{Value: "1"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if live, err := s.store.ListLiveInstances(ctx); err != nil || len(live) != 0 {
		t.Fatalf("before the pass: %d listed, %v; want the legacy instance invisible", len(live), err)
	}

	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	invocation, _ := s.invocation()
	report, err := reconciler(invocation, tick)
	if err != nil {
		t.Fatal(err)
	}
	if report.Examined != 1 {
		t.Fatalf("report %+v, want the moved instance examined", report)
	}
	live, err := s.store.ListLiveInstances(ctx)
	if err != nil || len(live) != 1 || live[0].Name != name {
		t.Fatalf("after the pass: %v, %v; want %s listed", live, err, name)
	}
}
