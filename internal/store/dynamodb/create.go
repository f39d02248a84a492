package dynamodb

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// CreateInstance writes inst and reserves a slot of its pool in one
// transaction: the instance Put requires that no unexpired record of that name
// exists, the pool counter Update requires a free slot. Which of the two
// conditions failed tells ErrAlreadyExists from ErrPoolFull; when both did,
// ErrAlreadyExists wins, because a redelivered webhook for a job that already
// has its runner is a duplicate, not a capacity problem.
func (s *Store) CreateInstance(ctx context.Context, inst *runner.Instance, maxRunners int) error {
	if err := validateNew(inst); err != nil {
		return err
	}
	first := inst.Clone()
	first.Version = 1
	item, err := marshalInstance(first, requestToken())
	if err != nil {
		return err
	}

	err = retryContention(ctx, func() error {
		// The SDK gives each call a ClientRequestToken and keeps it across its
		// own retries, so a retry after a lost response is answered with the
		// first attempt's success rather than ErrAlreadyExists.
		_, err := s.client.TransactWriteItems(ctx, &ddb.TransactWriteItemsInput{
			TransactItems: []types.TransactWriteItem{
				{Put: s.putNewInstance(item)},
				{Update: s.reserveSlot(inst.Pool, maxRunners)},
			},
		})
		return err
	})
	if failed, ok := conditionFailed(err); ok {
		if failed[0] {
			return fmt.Errorf("create instance %q: %w", inst.Name, store.ErrAlreadyExists)
		}
		return fmt.Errorf("create instance %q in pool %q (max %d): %w", inst.Name, inst.Pool, maxRunners, store.ErrPoolFull)
	}
	if err != nil {
		return fmt.Errorf("create instance %q: %w", inst.Name, err)
	}
	inst.Version = first.Version
	return nil
}

// putNewInstance writes item unless a record of the same name exists. A
// deleted record past its expiry counts as absent: the TTL sweeper may not
// have removed it yet, but it no longer guards against anything.
func (s *Store) putNewInstance(item map[string]types.AttributeValue) *types.Put {
	return &types.Put{
		TableName:           aws.String(s.table),
		Item:                item,
		ConditionExpression: aws.String("attribute_not_exists(#pk) OR (#status = :deleted AND #expires_at <= :now)"),
		ExpressionAttributeNames: map[string]string{
			"#pk":         attrPK,
			"#status":     attrStatus,
			"#expires_at": attrExpiresAt,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":deleted": &types.AttributeValueMemberS{Value: string(runner.StatusDeleted)},
			":now":     &types.AttributeValueMemberS{Value: formatTime(s.now())},
		},
	}
}

// reserveSlot adds one to the pool's live counter if that keeps it within
// maxRunners. The pool item springs into being on the pool's first create.
func (s *Store) reserveSlot(pool string, maxRunners int) *types.Update {
	condition := "attribute_not_exists(#live) OR #live < :max"
	if maxRunners < 1 {
		// A pool with no slots is always full, even before its counter exists.
		condition = "#live < :max"
	}
	return &types.Update{
		TableName:           aws.String(s.table),
		Key:                 keyOf(poolKey(pool)),
		UpdateExpression:    aws.String("ADD #live :one"),
		ConditionExpression: aws.String(condition),
		ExpressionAttributeNames: map[string]string{
			"#live": attrPoolLive,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":one": &types.AttributeValueMemberN{Value: "1"},
			":max": &types.AttributeValueMemberN{Value: strconv.Itoa(maxRunners)},
		},
	}
}

func validateNew(inst *runner.Instance) error {
	switch {
	case inst == nil:
		return errors.New("create instance: nil instance")
	case inst.Name == "":
		return errors.New("create instance: empty name")
	case inst.Pool == "":
		// The pool is a key of the live index, where DynamoDB refuses "".
		return fmt.Errorf("create instance %q: empty pool", inst.Name)
	case !inst.Status.Valid() || !inst.Status.Live():
		// A deleted instance would hold a slot nothing could ever release.
		return fmt.Errorf("create instance %q: cannot create in status %q", inst.Name, inst.Status)
	}
	return nil
}
