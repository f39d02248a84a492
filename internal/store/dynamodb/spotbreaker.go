package dynamodb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// A pool's spot breaker is one META# item: the record as JSON (it is read
// and written whole, never queried into) and its version, which the
// conditional put compares.
const attrSpotBreaker = "spot_breaker"

func spotBreakerKey(pool string) string { return prefixMeta + "spot_breaker#" + pool }

// GetSpotBreaker implements store.SpotBreakers, with ConsistentRead: the
// caller is about to compare-and-set on what it reads.
func (s *Store) GetSpotBreaker(ctx context.Context, pool string) (*runner.SpotBreaker, error) {
	out, err := s.client.GetItem(ctx, &ddb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(spotBreakerKey(pool)),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("read spot breaker %s: %w", pool, err)
	}
	b := &runner.SpotBreaker{Pool: pool}
	if out.Item == nil {
		return b, nil
	}
	if err := json.Unmarshal([]byte(stringAttr(out.Item, attrSpotBreaker)), b); err != nil {
		return nil, fmt.Errorf("read spot breaker %s: %w", pool, err)
	}
	return b, nil
}

// PutSpotBreaker implements store.SpotBreakers. A put whose response was
// lost and that the SDK retried finds its own write and reports a
// conflict: the caller re-reads, and finds what it meant to write.
func (s *Store) PutSpotBreaker(ctx context.Context, next *runner.SpotBreaker) error {
	if next == nil || next.Pool == "" {
		return errors.New("write spot breaker: no pool")
	}
	expected := next.Version
	record := next.Clone()
	record.Version = expected + 1
	raw, err := json.Marshal(record)
	if err != nil {
		return fmt.Errorf("write spot breaker %s: %w", next.Pool, err)
	}
	in := &ddb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			attrPK:          &types.AttributeValueMemberS{Value: spotBreakerKey(next.Pool)},
			attrSpotBreaker: &types.AttributeValueMemberS{Value: string(raw)},
			attrVersion:     &types.AttributeValueMemberN{Value: strconv.FormatInt(record.Version, 10)},
		},
		ExpressionAttributeNames: map[string]string{"#pk": attrPK},
	}
	if expected == 0 {
		in.ConditionExpression = aws.String("attribute_not_exists(#pk)")
	} else {
		in.ConditionExpression = aws.String("#version = :version")
		in.ExpressionAttributeNames = map[string]string{"#version": attrVersion}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{
			":version": &types.AttributeValueMemberN{Value: strconv.FormatInt(expected, 10)},
		}
	}
	_, err = s.client.PutItem(ctx, in)
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		return &store.SpotBreakerConflictError{Pool: next.Pool, ExpectedVersion: expected}
	}
	if err != nil {
		return fmt.Errorf("write spot breaker %s: %w", next.Pool, err)
	}
	next.Version = record.Version
	return nil
}
