package dynamodb

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

func testInstance(pool string, jobID int64) *runner.Instance {
	at := time.Now().Truncate(time.Millisecond)
	return &runner.Instance{
		Name:            runner.InstanceName(pool, jobID, 1),
		Pool:            pool,
		Status:          runner.StatusPendingCreate,
		RunnerStatus:    runner.RunnerPending,
		JobID:           jobID,
		RunAttempt:      1,
		Owner:           runner.Owner{Org: "octo-org"},
		CreatedAt:       at,
		UpdatedAt:       at,
		StatusChangedAt: at,
	}
}

// roomy is a max_runners no test fills.
const roomy = 100_000

func mustCreate(t *testing.T, s *Store, inst *runner.Instance) {
	t.Helper()
	if err := s.CreateInstance(context.Background(), store.Admission{Instance: inst, MaxRunners: roomy}); err != nil {
		t.Fatalf("CreateInstance(%s): %v", inst.Name, err)
	}
}

func testJob(pool string, id int64) *runner.Job {
	at := time.Now().Truncate(time.Millisecond)
	return &runner.Job{
		ID:              id,
		RunAttempt:      1,
		Pool:            pool,
		Owner:           runner.Owner{Org: "octo-org"},
		Repository:      "octo-org/app",
		Labels:          []string{"self-hosted", "linux"},
		Status:          runner.JobOpen,
		QueuedAt:        at,
		CreatedAt:       at,
		UpdatedAt:       at,
		StatusChangedAt: at,
	}
}

// admissionFor is the admission of the first instance made for job, which
// names it, created in the same write as the job when from is "".
func admissionFor(job *runner.Job, from runner.JobStatus) store.Admission {
	inst := testInstance(job.Pool, job.ID)
	inst.Name = job.InstanceFor(job.Made + 1)
	next := job.Clone()
	next.Instance = inst.Name
	next.Made++
	return store.Admission{Instance: inst, MaxRunners: roomy, Job: next, JobFrom: from}
}

func mustCreateJob(t *testing.T, s *Store, job *runner.Job) {
	t.Helper()
	if err := s.CreateJob(context.Background(), job); err != nil {
		t.Fatalf("CreateJob(%s): %v", job.Key(), err)
	}
}

// mustMoveJob writes job to status to, compare-and-set, and returns the
// version written.
func mustMoveJob(t *testing.T, s *Store, job *runner.Job, to runner.JobStatus) *runner.Job {
	t.Helper()
	next, err := job.Transition(to, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateJob(context.Background(), job.Status, next); err != nil {
		t.Fatalf("UpdateJob(%s %s -> %s): %v", job.Key(), job.Status, to, err)
	}
	return next
}

// mustMove writes cur through statuses, one compare-and-set each, and
// returns the last version written.
func mustMove(t *testing.T, s *Store, cur *runner.Instance, statuses ...runner.Status) *runner.Instance {
	t.Helper()
	for _, to := range statuses {
		next, err := cur.Transition(to, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.UpdateInstance(context.Background(), cur.Status, next); err != nil {
			t.Fatalf("UpdateInstance(%s %s -> %s): %v", cur.Name, cur.Status, to, err)
		}
		cur = next
	}
	return cur
}

var toDeleted = []runner.Status{runner.StatusPendingDelete, runner.StatusDeleting, runner.StatusDeleted}

// rawItem reads an item as stored, bypassing the adapter.
func rawItem(t *testing.T, s *Store, pk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := s.client.GetItem(context.Background(), &ddb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(pk),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func requireUsage(t *testing.T, s *Store, pool string, want int) {
	t.Helper()
	got, err := s.PoolUsage(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("PoolUsage(%s) = %d, want %d", pool, got, want)
	}
}
