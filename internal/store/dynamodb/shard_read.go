package dynamodb

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// liveItems returns the full items of the liveIndex entries of the given
// shards (only those whose sort key is sortKey, unless that is ""). Every
// shard is queried, and its items fetched, in a goroutine of its own: a list
// costs about one shard's time, not the sum of all of theirs.
func (s *Store) liveItems(ctx context.Context, shards []string, sortKey string) ([]map[string]types.AttributeValue, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	found := make([][]map[string]types.AttributeValue, len(shards))
	var (
		wg       sync.WaitGroup
		failOnce sync.Once
		failure  error
	)
	for i, shard := range shards {
		wg.Go(func() {
			keys, err := s.queryShard(ctx, shard, sortKey)
			if err == nil {
				found[i], err = s.batchGet(ctx, keys)
			}
			if err != nil {
				// The first failure is the one to report; it stops the
				// other shards, whose errors then only say so.
				failOnce.Do(func() {
					failure = fmt.Errorf("shard %s: %w", shard, err)
					cancel()
				})
			}
		})
	}
	wg.Wait()
	if failure != nil {
		return nil, failure
	}
	return slices.Concat(found...), nil
}

// queryShard returns the table keys of one shard's index entries, in the
// shard's sort key order.
func (s *Store) queryShard(ctx context.Context, shard, sortKey string) ([]map[string]types.AttributeValue, error) {
	input := &ddb.QueryInput{
		TableName:                aws.String(s.table),
		IndexName:                aws.String(liveIndex),
		KeyConditionExpression:   aws.String("#shard = :shard"),
		ProjectionExpression:     aws.String("#pk"),
		ExpressionAttributeNames: map[string]string{"#shard": attrLiveKey, "#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":shard": &types.AttributeValueMemberS{Value: shard},
		},
	}
	if sortKey != "" {
		input.KeyConditionExpression = aws.String("#shard = :shard AND #sort = :sort")
		input.ExpressionAttributeNames["#sort"] = attrLiveSort
		input.ExpressionAttributeValues[":sort"] = &types.AttributeValueMemberS{Value: sortKey}
	}
	if s.pageSize > 0 {
		input.Limit = aws.Int32(s.pageSize)
	}
	var keys []map[string]types.AttributeValue
	pages := ddb.NewQueryPaginator(s.client, input)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", liveIndex, err)
		}
		for _, item := range page.Items {
			keys = append(keys, keyOf(stringAttr(item, attrPK)))
		}
	}
	return keys, nil
}

// batchGetLimit is BatchGetItem's maximum number of keys per request.
const batchGetLimit = 100

// maxBatchAttempts bounds how often unprocessed keys are asked for again.
const maxBatchAttempts = 10

// batchGet fetches items by key with ConsistentRead. Keys DynamoDB leaves
// unprocessed (throttling, or the 16 MB response cap) are asked for again
// after a back-off; the SDK does not do that itself.
func (s *Store) batchGet(ctx context.Context, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	var items []map[string]types.AttributeValue
	for chunk := range slices.Chunk(keys, batchGetLimit) {
		pending := chunk
		for attempt := 1; len(pending) > 0; attempt++ {
			if attempt > maxBatchAttempts {
				return nil, fmt.Errorf("batch get: %d keys still unprocessed after %d attempts", len(pending), maxBatchAttempts)
			}
			if attempt > 1 {
				if err := sleepBackoff(ctx, attempt-1); err != nil {
					return nil, fmt.Errorf("batch get: %d keys left unprocessed: %w", len(pending), err)
				}
			}
			out, err := s.client.BatchGetItem(ctx, &ddb.BatchGetItemInput{
				RequestItems: map[string]types.KeysAndAttributes{
					s.table: {Keys: pending, ConsistentRead: aws.Bool(true)},
				},
			})
			if err != nil {
				return nil, fmt.Errorf("batch get: %w", err)
			}
			items = append(items, out.Responses[s.table]...)
			pending = out.UnprocessedKeys[s.table].Keys
		}
	}
	return items, nil
}
