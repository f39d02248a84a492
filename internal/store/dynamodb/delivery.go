package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// attrMark is a random token unique to one MarkDelivery call. If the SDK
// retries a Put whose first attempt succeeded but whose response was lost,
// the retry finds the mark and would report a duplicate, dropping the very
// webhook it just recorded; the token shows the mark is our own.
const attrMark = "mark"

// MarkDelivery records the delivery id until ttl has passed. A mark past its
// expiry counts as absent even if the TTL sweeper has not removed it yet.
func (s *Store) MarkDelivery(ctx context.Context, id string, ttl time.Duration) (bool, error) {
	if id == "" {
		return false, errors.New("mark delivery: empty id")
	}
	if ttl <= 0 {
		return false, fmt.Errorf("mark delivery %q: ttl must be positive, got %s", id, ttl)
	}
	now := s.now()
	expiresAt := now.Add(ttl)
	token := requestToken()
	_, err := s.client.PutItem(ctx, &ddb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			attrPK:        &types.AttributeValueMemberS{Value: deliveryKey(id)},
			attrExpiresAt: &types.AttributeValueMemberS{Value: formatTime(expiresAt)},
			attrTTL:       &types.AttributeValueMemberN{Value: strconv.FormatInt(ttlSeconds(expiresAt), 10)},
			attrMark:      &types.AttributeValueMemberS{Value: token},
		},
		ConditionExpression:      aws.String("attribute_not_exists(#pk) OR #expires_at <= :now"),
		ExpressionAttributeNames: map[string]string{"#pk": attrPK, "#expires_at": attrExpiresAt},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": &types.AttributeValueMemberS{Value: formatTime(now)},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if ccf, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		return stringAttr(ccf.Item, attrMark) == token, nil
	}
	if err != nil {
		return false, fmt.Errorf("mark delivery %q: %w", id, err)
	}
	return true, nil
}

// ForgetDelivery deletes the mark; forgetting an absent one is not an error.
func (s *Store) ForgetDelivery(ctx context.Context, id string) error {
	_, err := s.client.DeleteItem(ctx, &ddb.DeleteItemInput{
		TableName: aws.String(s.table),
		Key:       keyOf(deliveryKey(id)),
	})
	if err != nil {
		return fmt.Errorf("forget delivery %q: %w", id, err)
	}
	return nil
}
