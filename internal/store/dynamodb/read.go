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
	if pool == "" {
		// "" is no pool's name, and the index could not even be asked.
		return nil, nil
	}
	return s.listLive(ctx, pool)
}

// ListLiveInstances returns every live instance, sorted by name.
func (s *Store) ListLiveInstances(ctx context.Context) ([]*runner.Instance, error) {
	return s.listLive(ctx, "")
}

// listLive reads the instance shards of liveIndex (all of each, or one
// pool's sort key) and the full items. The index is eventually consistent,
// so instances that turn out to be deleted by their consistent read are
// dropped; one created a moment ago may be missing, which every caller of a
// list must live with.
func (s *Store) listLive(ctx context.Context, pool string) ([]*runner.Instance, error) {
	items, err := s.liveItems(ctx, shardKeys(instanceShardPrefix), pool)
	if err != nil {
		return nil, fmt.Errorf("list live instances (pool %q): %w", pool, err)
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
