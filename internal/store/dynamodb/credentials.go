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

	"github.com/runfleet/runfleet/internal/store"
)

// Runner credentials are items of their own, CREDENTIALS#<name>, beside the
// instance item rather than in it: the instance item is read by every
// engine path, the operator API and the reconciler's lists, none of which
// may ever see the JIT configuration; and the credentials expire (TTL) long
// before the instance record does.
const (
	prefixCredentials = "CREDENTIALS#"

	attrCreateAttempt = "create_attempt"
	attrJITConfig     = "jit_config"
)

var _ store.Credentials = (*Store)(nil)

func credentialsKey(instance string) string { return prefixCredentials + instance }

// PutRunnerCredentials implements store.Credentials with one conditional
// PutItem. A retry of a Put whose response was lost finds its own attempt
// stored and succeeds again, so the SDK's retries are safe.
func (s *Store) PutRunnerCredentials(ctx context.Context, c store.RunnerCredentials, ttl time.Duration) error {
	if err := store.CheckRunnerCredentials(c, ttl); err != nil {
		return err
	}
	now := s.now()
	expiresAt := now.Add(ttl)
	_, err := s.client.PutItem(ctx, &ddb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			attrPK:            &types.AttributeValueMemberS{Value: credentialsKey(c.Instance)},
			attrCreateAttempt: &types.AttributeValueMemberN{Value: strconv.Itoa(c.CreateAttempt)},
			attrJITConfig:     &types.AttributeValueMemberS{Value: c.EncodedJITConfig},
			attrExpiresAt:     &types.AttributeValueMemberS{Value: formatTime(expiresAt)},
			attrTTL:           &types.AttributeValueMemberN{Value: strconv.FormatInt(ttlSeconds(expiresAt), 10)},
		},
		ConditionExpression: aws.String("attribute_not_exists(#pk) OR #attempt <= :attempt OR #expires_at <= :now"),
		ExpressionAttributeNames: map[string]string{
			"#pk": attrPK, "#attempt": attrCreateAttempt, "#expires_at": attrExpiresAt,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":attempt": &types.AttributeValueMemberN{Value: strconv.Itoa(c.CreateAttempt)},
			":now":     &types.AttributeValueMemberS{Value: formatTime(now)},
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if ccf, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		stored, _ := strconv.Atoi(stringAttr(ccf.Item, attrCreateAttempt))
		return &store.StaleCredentialsError{Instance: c.Instance, Attempt: c.CreateAttempt, StoredAttempt: stored}
	}
	if err != nil {
		return fmt.Errorf("put runner credentials of %q: %w", c.Instance, err)
	}
	return nil
}

// GetRunnerCredentials implements store.Credentials. It reads consistently:
// the machine asks moments after the worker wrote. An expired item counts
// as absent even if the TTL sweeper has not removed it yet.
func (s *Store) GetRunnerCredentials(ctx context.Context, instance string) (*store.RunnerCredentials, error) {
	out, err := s.client.GetItem(ctx, &ddb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(credentialsKey(instance)),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("get runner credentials of %q: %w", instance, err)
	}
	expiresAt := stringAttr(out.Item, attrExpiresAt)
	if out.Item == nil || expiresAt == "" || expired(expiresAt, s.now()) {
		return nil, fmt.Errorf("runner credentials of %q: %w", instance, store.ErrCredentialsNotFound)
	}
	attempt, err := strconv.Atoi(stringAttr(out.Item, attrCreateAttempt))
	if err != nil {
		return nil, fmt.Errorf("runner credentials of %q: bad stored create attempt: %w", instance, err)
	}
	at, err := parseTime(expiresAt)
	if err != nil {
		return nil, fmt.Errorf("runner credentials of %q: %w", instance, err)
	}
	return &store.RunnerCredentials{
		Instance:         instance,
		CreateAttempt:    attempt,
		EncodedJITConfig: stringAttr(out.Item, attrJITConfig),
		ExpiresAt:        at,
	}, nil
}

// DeleteRunnerCredentials implements store.Credentials.
func (s *Store) DeleteRunnerCredentials(ctx context.Context, instance string) error {
	_, err := s.client.DeleteItem(ctx, &ddb.DeleteItemInput{
		TableName: aws.String(s.table),
		Key:       keyOf(credentialsKey(instance)),
	})
	if err != nil {
		return fmt.Errorf("delete runner credentials of %q: %w", instance, err)
	}
	return nil
}
