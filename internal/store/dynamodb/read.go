package dynamodb

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// GetInstance reads with ConsistentRead, so a caller about to compare-and-set
// sees the latest version. A deleted record past its expiry is reported as
// not found, as CreateInstance treats it, even if the sweeper left it there.
func (s *Store) GetInstance(ctx context.Context, name string) (*runner.Instance, error) {
	out, err := s.client.GetItem(ctx, &ddb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(instanceKey(name)),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get instance %q: %w", name, err)
	}
	if out.Item == nil || s.expiredRecord(out.Item) {
		return nil, fmt.Errorf("get instance %q: %w", name, store.ErrNotFound)
	}
	return unmarshalInstance(out.Item)
}

func (s *Store) expiredRecord(item map[string]types.AttributeValue) bool {
	return expired(stringAttr(item, attrExpiresAt), s.now()) &&
		stringAttr(item, attrStatus) == string(runner.StatusDeleted)
}

// ListInstancesByPool returns the pool's live instances, sorted by name.
func (s *Store) ListInstancesByPool(ctx context.Context, pool string) ([]*runner.Instance, error) {
	return s.listLive(ctx, pool)
}

// ListLiveInstances returns every live instance, sorted by name.
func (s *Store) ListLiveInstances(ctx context.Context) ([]*runner.Instance, error) {
	return s.listLive(ctx, "")
}

// listLive reads the live index (all of it, or one pool's sort-key range),
// then fetches the full items, since the index holds keys only. The index
// is eventually consistent, so items are fetched with ConsistentRead and
// any that turn out to be deleted by now are dropped; an instance created a
// moment ago may be missing, which every caller of a list must live with.
func (s *Store) listLive(ctx context.Context, pool string) ([]*runner.Instance, error) {
	keys, err := s.queryLiveKeys(ctx, pool)
	if err != nil {
		return nil, err
	}
	items, err := s.batchGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	instances := make([]*runner.Instance, 0, len(items))
	for _, item := range items {
		inst, err := unmarshalInstance(item)
		if err != nil {
			return nil, err
		}
		if inst.Status.Live() && (pool == "" || inst.Pool == pool) {
			instances = append(instances, inst)
		}
	}
	slices.SortFunc(instances, func(a, b *runner.Instance) int { return strings.Compare(a.Name, b.Name) })
	return instances, nil
}

func (s *Store) queryLiveKeys(ctx context.Context, pool string) ([]map[string]types.AttributeValue, error) {
	input := &ddb.QueryInput{
		TableName:                aws.String(s.table),
		IndexName:                aws.String(liveIndex),
		KeyConditionExpression:   aws.String("#is_live = :yes"),
		ProjectionExpression:     aws.String("#pk"),
		ExpressionAttributeNames: map[string]string{"#is_live": attrIsLive, "#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":yes": &types.AttributeValueMemberS{Value: isLiveYes},
		},
	}
	if s.pageSize > 0 {
		input.Limit = aws.Int32(s.pageSize)
	}
	if pool != "" {
		input.KeyConditionExpression = aws.String("#is_live = :yes AND #pool = :pool")
		input.ExpressionAttributeNames["#pool"] = attrPool
		input.ExpressionAttributeValues[":pool"] = &types.AttributeValueMemberS{Value: pool}
	}
	var keys []map[string]types.AttributeValue
	pages := ddb.NewQueryPaginator(s.client, input)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("query live instances (pool %q): %w", pool, err)
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
				return nil, fmt.Errorf("batch get instances: %d keys still unprocessed after %d attempts", len(pending), maxBatchAttempts)
			}
			if attempt > 1 {
				if err := sleepBackoff(ctx, attempt-1); err != nil {
					return nil, fmt.Errorf("batch get instances: %d keys left unprocessed: %w", len(pending), err)
				}
			}
			out, err := s.client.BatchGetItem(ctx, &ddb.BatchGetItemInput{
				RequestItems: map[string]types.KeysAndAttributes{
					s.table: {Keys: pending, ConsistentRead: aws.Bool(true)},
				},
			})
			if err != nil {
				return nil, fmt.Errorf("batch get instances: %w", err)
			}
			items = append(items, out.Responses[s.table]...)
			pending = out.UnprocessedKeys[s.table].Keys
		}
	}
	return items, nil
}

// PoolUsage reads the pool's counter with ConsistentRead; a pool that never
// had an instance has no item and uses nothing.
func (s *Store) PoolUsage(ctx context.Context, pool string) (int, error) {
	out, err := s.client.GetItem(ctx, &ddb.GetItemInput{
		TableName:                aws.String(s.table),
		Key:                      keyOf(poolKey(pool)),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String("#live"),
		ExpressionAttributeNames: map[string]string{"#live": attrPoolLive},
	})
	if err != nil {
		return 0, fmt.Errorf("pool %q usage: %w", pool, err)
	}
	var counter struct {
		Live int `dynamodbav:"live"`
	}
	if err := attributevalue.UnmarshalMap(out.Item, &counter); err != nil {
		return 0, fmt.Errorf("pool %q usage: %w", pool, err)
	}
	return counter.Live, nil
}
