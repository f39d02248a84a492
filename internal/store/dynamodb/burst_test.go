package dynamodb

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/testenv"
)

// A burst of burstJobs jobs, each admitted with its instance in one
// transaction by concurrent writers, spreads its index writes over every
// shard: no index partition takes much more than its 1/shardCount share,
// which is what keeps a burst on AWS below one partition's ~1,000 writes/s
// per shard. The counts come from the items' own shard attributes and are
// checked against the index itself. The job ids are fixed, and the hash is
// too, so the distribution is the same on every run.
func TestBurstSpreadsIndexWritesOverShards(t *testing.T) {
	const (
		burstJobs = 5000
		pools     = 8
		writers   = 32
	)
	ctx := context.Background()
	s := newTestStore(t, testenv.DynamoDB(t))

	ids := make(chan int64)
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for id := range ids {
				job := testJob(fmt.Sprintf("pool-%d", id%pools), id)
				if err := s.CreateInstance(ctx, admissionFor(job, "")); err != nil {
					errs <- fmt.Errorf("admit job %d: %w", id, err)
					return
				}
			}
		})
	}
	for id := int64(1); id <= burstJobs; id++ {
		ids <- 1_000_000 + id
	}
	close(ids)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	counts := shardAttributeCounts(t, s)
	share := float64(burstJobs) / shardCount
	for _, prefix := range []string{instanceShardPrefix, jobShardPrefix} {
		total, least, most := 0, burstJobs, 0
		line := make([]string, shardCount)
		for i, shard := range shardKeys(prefix) {
			n := counts[shard]
			line[i] = fmt.Sprintf("%02d:%d", i, n)
			total += n
			least, most = min(least, n), max(most, n)
			// Within a fifth of a fair share: a 16-shard index never puts
			// more than about 1/13 of a burst on one partition.
			if float64(n) < 0.8*share || float64(n) > 1.2*share {
				t.Errorf("shard %s took %d index writes, outside [%.0f, %.0f]", shard, n, 0.8*share, 1.2*share)
			}
			if indexed := indexCount(t, s, shard); indexed != n {
				t.Errorf("shard %s: %d items carry it but the index holds %d", shard, n, indexed)
			}
		}
		if total != burstJobs {
			t.Errorf("%s shards took %d index writes, want %d", prefix, total, burstJobs)
		}
		t.Logf("%s index writes per shard (fair share %.1f, least %d, most %d): %s",
			strings.TrimSuffix(prefix, "#"), share, least, most, strings.Join(line, " "))
	}

	// The lists read it all back through the shards.
	open, err := s.ListOpenJobs(ctx)
	if err != nil || len(open) != burstJobs {
		t.Fatalf("ListOpenJobs = %d jobs, %v; want %d", len(open), err, burstJobs)
	}
	live, err := s.ListLiveInstances(ctx)
	if err != nil || len(live) != burstJobs {
		t.Fatalf("ListLiveInstances = %d instances, %v; want %d", len(live), err, burstJobs)
	}
	inPool, err := s.ListInstancesByPool(ctx, "pool-3")
	if err != nil || len(inPool) != burstJobs/pools {
		t.Fatalf("ListInstancesByPool(pool-3) = %d, %v; want %d", len(inPool), err, burstJobs/pools)
	}
	requireUsage(t, s, "pool-3", burstJobs/pools)
}

// shardAttributeCounts scans the table, consistently, and counts the items
// carrying each live_shard value.
func shardAttributeCounts(t *testing.T, s *Store) map[string]int {
	t.Helper()
	counts := map[string]int{}
	pages := ddb.NewScanPaginator(s.client, &ddb.ScanInput{
		TableName:                aws.String(s.table),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#shard"),
		ExpressionAttributeNames: map[string]string{"#shard": attrLiveKey},
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range page.Items {
			if shard := stringAttr(item, attrLiveKey); shard != "" {
				counts[shard]++
			}
		}
	}
	return counts
}

// indexCount counts one shard's entries in liveIndex.
func indexCount(t *testing.T, s *Store, shard string) int {
	t.Helper()
	total := 0
	pages := ddb.NewQueryPaginator(s.client, &ddb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(liveIndex),
		KeyConditionExpression:    aws.String("#shard = :shard"),
		Select:                    types.SelectCount,
		ExpressionAttributeNames:  map[string]string{"#shard": attrLiveKey},
		ExpressionAttributeValues: map[string]types.AttributeValue{":shard": &types.AttributeValueMemberS{Value: shard}},
	})
	for pages.HasMorePages() {
		page, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		total += int(page.Count)
	}
	return total
}
