package dynamodb

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testenv"
)

// An instance written by a release before the sharded index is invisible to
// the lists until MigrateLegacyLive (or its next write) moves it.
func TestMigrateLegacyLive(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, testenv.DynamoDB(t))
	s.pageSize = 2
	var legacy []*runner.Instance
	for job := int64(1); job <= 5; job++ {
		inst := testInstance("p", job)
		mustCreate(t, s, inst)
		toLegacyLayout(t, s, inst.Name)
		legacy = append(legacy, inst)
	}
	if live, err := s.ListLiveInstances(ctx); err != nil || len(live) != 0 {
		t.Fatalf("legacy instances listed before the move: %d, %v", len(live), err)
	}

	// A write moves an instance by itself.
	mustMove(t, s, legacy[0], runner.StatusCreating)
	requireLegacyGone(t, s, legacy[0].Name)

	moved, err := s.MigrateLegacyLive(ctx)
	if err != nil || moved != 4 {
		t.Fatalf("MigrateLegacyLive = %d, %v; want 4 moved", moved, err)
	}
	for _, inst := range legacy {
		requireLegacyGone(t, s, inst.Name)
	}
	live, err := s.ListInstancesByPool(ctx, "p")
	if err != nil || len(live) != 5 {
		t.Fatalf("ListInstancesByPool after the move = %d, %v; want 5", len(live), err)
	}
	if again, err := s.MigrateLegacyLive(ctx); err != nil || again != 0 {
		t.Fatalf("second MigrateLegacyLive = %d, %v; want 0", again, err)
	}
}

// toLegacyLayout rewrites a live instance item as the unsharded release
// stored it.
func toLegacyLayout(t *testing.T, s *Store, name string) {
	t.Helper()
	_, err := s.client.UpdateItem(context.Background(), &ddb.UpdateItemInput{
		TableName:        aws.String(s.table),
		Key:              keyOf(instanceKey(name)),
		UpdateExpression: aws.String("SET is_live = :yes REMOVE live_shard, live_sort"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":yes": &types.AttributeValueMemberS{Value: "1"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func requireLegacyGone(t *testing.T, s *Store, name string) {
	t.Helper()
	item := rawItem(t, s, instanceKey(name))
	if _, ok := item["is_live"]; ok {
		t.Fatalf("%s still carries is_live", name)
	}
	if stringAttr(item, "live_shard") == "" || stringAttr(item, "live_sort") != "p" {
		t.Fatalf("%s has no sharded index keys: %v", name, item)
	}
}
