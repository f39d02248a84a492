package dynamodb

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/runner"
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
		Owner:           "octo-org",
		CreatedAt:       at,
		UpdatedAt:       at,
		StatusChangedAt: at,
	}
}

func mustCreate(t *testing.T, s *Store, inst *runner.Instance) {
	t.Helper()
	if err := s.CreateInstance(context.Background(), inst, 1000); err != nil {
		t.Fatalf("CreateInstance(%s): %v", inst.Name, err)
	}
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
