package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/runner"
)

// MigrateLegacyLive moves the live instances written by releases before
// liveIndex (they carry is_live, and sit only in legacyLiveIndex) into
// liveIndex, and returns how many it moved. Until then the lists do not see
// them; any write of such an instance moves it too, since a write stores
// the whole item in the current layout. Running it again, or alongside
// other writers, is harmless: each move is conditional on the item still
// being in the old layout and live, and changes no field the domain reads,
// so it takes no version.
func (s *Store) MigrateLegacyLive(ctx context.Context) (int, error) {
	input := &ddb.QueryInput{
		TableName:                aws.String(s.table),
		IndexName:                aws.String(legacyLiveIndex),
		KeyConditionExpression:   aws.String("#legacy = :yes"),
		ProjectionExpression:     aws.String("#pk"),
		ExpressionAttributeNames: map[string]string{"#legacy": attrLegacyLive, "#pk": attrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":yes": &types.AttributeValueMemberS{Value: "1"},
		},
	}
	if s.pageSize > 0 {
		input.Limit = aws.Int32(s.pageSize)
	}
	moved := 0
	pages := ddb.NewQueryPaginator(s.client, input)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return moved, fmt.Errorf("migrate legacy live instances: query %s: %w", legacyLiveIndex, err)
		}
		for _, item := range page.Items {
			ok, err := s.moveLegacyLive(ctx, stringAttr(item, attrPK))
			if err != nil {
				return moved, err
			}
			if ok {
				moved++
			}
		}
	}
	if moved > 0 {
		s.log.Info("moved live instances of the previous layout into the sharded live index", "table", s.table, "moved", moved)
	}
	return moved, nil
}

// moveLegacyLive gives one old-layout instance its liveIndex keys and takes
// its legacy key away, in one conditional UpdateItem; false if the item was
// rewritten or deleted since the query saw it.
func (s *Store) moveLegacyLive(ctx context.Context, pk string) (bool, error) {
	_, err := s.client.UpdateItem(ctx, &ddb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 keyOf(pk),
		UpdateExpression:    aws.String("SET #shard = :shard, #sort = #pool REMOVE #legacy"),
		ConditionExpression: aws.String("attribute_exists(#legacy) AND attribute_exists(#pool) AND #status <> :deleted"),
		ExpressionAttributeNames: map[string]string{
			"#shard":  attrLiveKey,
			"#sort":   attrLiveSort,
			"#pool":   attrPool,
			"#legacy": attrLegacyLive,
			"#status": attrStatus,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":shard":   &types.AttributeValueMemberS{Value: shardKey(instanceShardPrefix, shardOf(pk))},
			":deleted": &types.AttributeValueMemberS{Value: string(runner.StatusDeleted)},
		},
	})
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("migrate legacy live instance %s: %w", pk, err)
	}
	s.log.Debug("moved a live instance into the sharded live index", "table", s.table, "instance", strings.TrimPrefix(pk, prefixInstance))
	return true, nil
}
