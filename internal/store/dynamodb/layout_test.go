package dynamodb

import (
	"context"
	"slices"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testenv"
)

// The stored layout is a contract with template.yaml, the TTL sweeper and
// anyone reading the table in the console, so it is pinned down here.
func TestInstanceLayoutAndSparseIndex(t *testing.T) {
	s := newTestStore(t, testenv.DynamoDB(t))
	inst := testInstance("linux", 9_007_199_254_740_993)
	mustCreate(t, s, inst)
	pk := "INSTANCE#" + inst.Name
	shard := shardKey("instance#", shardOf(pk))

	live := rawItem(t, s, pk)
	for attr, want := range map[string]string{
		"pk":         pk,
		"live_shard": shard,
		"live_sort":  "linux",
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
	for _, attr := range []string{"ttl", "is_live"} {
		if _, ok := live[attr]; ok {
			t.Errorf("a live instance carries %s", attr)
		}
	}
	if got := stringAttr(rawItem(t, s, "POOL#linux"), "live"); got != "1" {
		t.Errorf("pool counter = %q, want 1", got)
	}
	if got := indexKeys(t, s, shard); !slices.Equal(got, []string{pk}) {
		t.Errorf("index shard %s holds %v, want just the instance", shard, got)
	}

	done := mustMove(t, s, inst, toDeleted...)
	deleted := rawItem(t, s, pk)
	for _, attr := range []string{"live_shard", "live_sort"} {
		if _, ok := deleted[attr]; ok {
			t.Errorf("a deleted instance keeps %s: it stays in the index", attr)
		}
	}
	wantTTL := strconv.FormatInt(ttlSeconds(done.ExpiresAt), 10)
	if got := stringAttr(deleted, "ttl"); got != wantTTL {
		t.Errorf("ttl = %q, want %s (ExpiresAt %v rounded up)", got, wantTTL, done.ExpiresAt)
	}
	if got := stringAttr(rawItem(t, s, "POOL#linux"), "live"); got != "0" {
		t.Errorf("pool counter after delete = %q, want 0", got)
	}
	if got := indexKeys(t, s, shard); len(got) != 0 {
		t.Errorf("index still holds %v after the delete", got)
	}
}

// A job sits in its shard of the index, sorted by when it was queued, only
// while its demand is unsettled; settled, it carries a ttl instead.
func TestJobLayoutAndSparseIndex(t *testing.T) {
	s := newTestStore(t, testenv.DynamoDB(t))
	job := testJob("linux", 4242)
	job.RunAttempt = 3
	mustCreateJob(t, s, job)
	pk := "JOB#4242#3"
	shard := shardKey("job#", shardOf(pk))

	item := rawItem(t, s, pk)
	for attr, want := range map[string]string{
		"pk":          pk,
		"live_shard":  shard,
		"live_sort":   job.QueuedAt.UTC().Format("2006-01-02T15:04:05.000000000Z"),
		"status":      "open",
		"version":     "1",
		"job_id":      "4242",
		"run_attempt": "3",
	} {
		if got := stringAttr(item, attr); got != want {
			t.Errorf("open job %s = %q, want %q", attr, got, want)
		}
	}
	if _, ok := item["ttl"]; ok {
		t.Error("an open job carries a ttl: the sweeper could remove it")
	}
	if got := indexKeys(t, s, shard); !slices.Equal(got, []string{pk}) {
		t.Errorf("index shard %s holds %v, want just the job", shard, got)
	}

	waiting := mustMoveJob(t, s, job, runner.JobWaiting)
	if got := indexKeys(t, s, shard); !slices.Equal(got, []string{pk}) {
		t.Errorf("a waiting job left the index: shard %s holds %v", shard, got)
	}
	served := mustMoveJob(t, s, waiting, runner.JobServed)
	item = rawItem(t, s, pk)
	for _, attr := range []string{"live_shard", "live_sort"} {
		if _, ok := item[attr]; ok {
			t.Errorf("a served job keeps %s: it stays in the index", attr)
		}
	}
	if served.ExpiresAt.IsZero() {
		t.Fatal("a served job got no ExpiresAt")
	}
	if got, want := stringAttr(item, "ttl"), strconv.FormatInt(ttlSeconds(served.ExpiresAt), 10); got != want {
		t.Errorf("ttl = %q, want %s", got, want)
	}
	if got := indexKeys(t, s, shard); len(got) != 0 {
		t.Errorf("index still holds %v after the job was served", got)
	}
}

// indexKeys returns the table keys in one shard of liveIndex.
func indexKeys(t *testing.T, s *Store, shard string) []string {
	t.Helper()
	out, err := s.client.Query(context.Background(), &ddb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String("live_sharded"),
		KeyConditionExpression:    aws.String("live_shard = :shard"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":shard": &types.AttributeValueMemberS{Value: shard}},
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
