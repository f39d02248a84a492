package dynamodb

import (
	"context"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testenv"
)

// The stored layout is a contract with template.yaml, the TTL sweeper and
// anyone reading the table in the console, so it is pinned down here.
func TestItemLayoutAndSparseIndex(t *testing.T) {
	s := newTestStore(t, testenv.DynamoDB(t))
	inst := testInstance("linux", 9_007_199_254_740_993)
	mustCreate(t, s, inst)

	live := rawItem(t, s, "INSTANCE#"+inst.Name)
	for attr, want := range map[string]string{
		"pk":         "INSTANCE#" + inst.Name,
		"is_live":    "1",
		"pool":       "linux",
		"status":     "pending_create",
		"version":    "1",
		"job_id":     "9007199254740993",
		"created_at": inst.CreatedAt.UTC().Format("2006-01-02T15:04:05.000000000Z"),
	} {
		if got := stringAttr(live, attr); got != want {
			t.Errorf("live item %s = %q, want %q", attr, got, want)
		}
	}
	if _, ok := live["job_id"].(*types.AttributeValueMemberN); !ok {
		t.Errorf("job_id stored as %T, want a number", live["job_id"])
	}
	if _, ok := live["ttl"]; ok {
		t.Error("a live instance carries a ttl: the sweeper could remove it")
	}
	if got := stringAttr(rawItem(t, s, "POOL#linux"), "live"); got != "1" {
		t.Errorf("pool counter = %q, want 1", got)
	}
	if got := liveIndexKeys(t, s); len(got) != 1 || got[0] != "INSTANCE#"+inst.Name {
		t.Errorf("live index holds %v, want just the instance", got)
	}

	done := mustMove(t, s, inst, toDeleted...)
	deleted := rawItem(t, s, "INSTANCE#"+inst.Name)
	if _, ok := deleted["is_live"]; ok {
		t.Error("a deleted instance keeps is_live: it stays in the live index")
	}
	wantTTL := strconv.FormatInt(ttlSeconds(done.ExpiresAt), 10)
	if got := stringAttr(deleted, "ttl"); got != wantTTL {
		t.Errorf("ttl = %q, want %s (ExpiresAt %v rounded up)", got, wantTTL, done.ExpiresAt)
	}
	if got := stringAttr(rawItem(t, s, "POOL#linux"), "live"); got != "0" {
		t.Errorf("pool counter after delete = %q, want 0", got)
	}
	if got := liveIndexKeys(t, s); len(got) != 0 {
		t.Errorf("live index still holds %v after the delete", got)
	}

	if _, err := s.MarkDelivery(context.Background(), "d-1", store.DeliveryRetention); err != nil {
		t.Fatal(err)
	}
	mark := rawItem(t, s, "DELIVERY#d-1")
	if _, ok := mark["ttl"].(*types.AttributeValueMemberN); !ok {
		t.Errorf("delivery ttl stored as %T, want a number", mark["ttl"])
	}
}

func liveIndexKeys(t *testing.T, s *Store) []string {
	t.Helper()
	out, err := s.client.Query(context.Background(), &ddb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(liveIndex),
		KeyConditionExpression:    aws.String("is_live = :yes"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":yes": &types.AttributeValueMemberS{Value: "1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, item := range out.Items {
		keys = append(keys, stringAttr(item, "pk"))
	}
	return keys
}
