package dynamodb

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testenv"
)

// A counter that drifted to zero (edited by hand) must neither go negative
// nor strand the instance in deleting.
func TestDeleteWithCounterAtZeroStillDeletes(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, testenv.DynamoDB(t))
	inst := testInstance("p", 1)
	mustCreate(t, s, inst)
	deleting := mustMove(t, s, inst, runner.StatusPendingDelete, runner.StatusDeleting)

	_, err := s.client.UpdateItem(ctx, &ddb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       keyOf(poolKey("p")),
		UpdateExpression:          aws.String("SET live = :zero"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":zero": &types.AttributeValueMemberN{Value: "0"}},
	})
	if err != nil {
		t.Fatal(err)
	}

	done := mustMove(t, s, deleting, runner.StatusDeleted)
	if done.Version != deleting.Version+1 {
		t.Fatalf("Version = %d, want %d", done.Version, deleting.Version+1)
	}
	got, err := s.GetInstance(ctx, inst.Name)
	if err != nil || got.Status != runner.StatusDeleted {
		t.Fatalf("GetInstance = %+v, %v; want deleted", got, err)
	}
	requireUsage(t, s, "p", 0)
}

// Moving an instance to another pool would later release a slot of the
// wrong pool; it is refused, and not as a conflict, which a caller would
// retry forever.
func TestUpdateCannotChangePool(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, testenv.DynamoDB(t))
	inst := testInstance("p", 1)
	mustCreate(t, s, inst)

	for _, to := range []runner.Status{runner.StatusCreating, runner.StatusPendingDelete} {
		next, _ := inst.Transition(to, inst.UpdatedAt)
		next.Pool = "other"
		err := s.UpdateInstance(ctx, runner.StatusPendingCreate, next)
		if err == nil || errors.Is(err, store.ErrConflict) {
			t.Fatalf("pool change with -> %s: got %v, want a plain error", to, err)
		}
		if next.Version != 1 {
			t.Fatalf("refused update changed the caller's Version to %d", next.Version)
		}
	}
	deleting := mustMove(t, s, inst, runner.StatusPendingDelete, runner.StatusDeleting)
	gone, _ := deleting.Transition(runner.StatusDeleted, deleting.UpdatedAt)
	gone.Pool = "other"
	if err := s.UpdateInstance(ctx, runner.StatusDeleting, gone); err == nil || errors.Is(err, store.ErrConflict) {
		t.Fatalf("pool change on delete: got %v, want a plain error", err)
	}
	requireUsage(t, s, "p", 1)
	requireUsage(t, s, "other", 0)
}
