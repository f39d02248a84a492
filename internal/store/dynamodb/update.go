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

// UpdateInstance replaces the stored instance with next, compare-and-set on
// status `from`, version next.Version and the pool (a pool change would
// release the wrong pool's slot later). A move to deleted also releases the
// pool slot and starts the record's retention clock, in one transaction.
func (s *Store) UpdateInstance(ctx context.Context, from runner.Status, next *runner.Instance) error {
	if next == nil {
		return errors.New("update instance: nil instance")
	}
	if err := runner.CheckTransition(next.Name, from, next.Status); err != nil {
		return err
	}
	written := next.Clone()
	written.Version = next.Version + 1
	if written.Status == runner.StatusDeleted && written.ExpiresAt.IsZero() {
		written.ExpiresAt = s.now().Add(store.DeletedRetention)
	}
	w := casWrite{
		name:    next.Name,
		from:    from,
		version: next.Version,
		pool:    next.Pool,
		writeID: requestToken(),
	}
	item, err := marshalInstance(written, w.writeID)
	if err != nil {
		return err
	}

	if written.Status == runner.StatusDeleted {
		err = s.putDeleted(ctx, w, item)
	} else {
		err = s.putInstance(ctx, w, item)
	}
	if err != nil {
		return w.explain(err)
	}
	next.Version = written.Version
	next.ExpiresAt = written.ExpiresAt
	return nil
}

// casWrite is one compare-and-set: what the stored instance must still be
// for the write to win, and the write's own id.
type casWrite struct {
	name    string
	from    runner.Status
	version int64
	pool    string
	writeID string
}

func (w casWrite) put(table string, item map[string]types.AttributeValue) *types.Put {
	return &types.Put{
		TableName:           aws.String(table),
		Item:                item,
		ConditionExpression: aws.String("#status = :from AND #version = :version AND #pool = :pool"),
		ExpressionAttributeNames: map[string]string{
			"#status":  attrStatus,
			"#version": attrVersion,
			"#pool":    attrPool,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":from":    &types.AttributeValueMemberS{Value: string(w.from)},
			":version": &types.AttributeValueMemberN{Value: strconv.FormatInt(w.version, 10)},
			":pool":    &types.AttributeValueMemberS{Value: w.pool},
		},
		// The stored item comes back on failure at no read cost: it tells
		// our own retried write from a lost race, and explains the loss.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// ours reports whether a failed condition found this very write stored: the
// SDK retried a PutItem whose first attempt succeeded but whose response was
// lost. (PutItem has no idempotency token; transactions do.)
func (w casWrite) ours(err error) bool {
	stored, lost := storedOnConditionFailure(err)
	return lost && stringAttr(stored, attrWriteID) == w.writeID
}

// putInstance is a plain conditional PutItem: one item, no transaction cost.
func (s *Store) putInstance(ctx context.Context, w casWrite, item map[string]types.AttributeValue) error {
	put := w.put(s.table, item)
	err := retryContention(ctx, func() error {
		_, err := s.client.PutItem(ctx, &ddb.PutItemInput{
			TableName:                           put.TableName,
			Item:                                put.Item,
			ConditionExpression:                 put.ConditionExpression,
			ExpressionAttributeNames:            put.ExpressionAttributeNames,
			ExpressionAttributeValues:           put.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	})
	if w.ours(err) {
		return nil
	}
	return err
}

// putDeleted writes the deleted instance and gives its slot back in one
// transaction. The counter never goes below zero; if it would (it was
// edited by hand, or the pool item was removed) the instance is deleted
// anyway with a warning, because refusing would strand it forever.
func (s *Store) putDeleted(ctx context.Context, w casWrite, item map[string]types.AttributeValue) error {
	err := retryContention(ctx, func() error {
		// Idempotent across the SDK's retries by its ClientRequestToken.
		_, err := s.client.TransactWriteItems(ctx, &ddb.TransactWriteItemsInput{
			TransactItems: []types.TransactWriteItem{
				{Put: w.put(s.table, item)},
				{Update: s.releaseSlot(w.pool)},
			},
		})
		return err
	})
	if failed, cancelled := conditionFailed(err); !cancelled || failed[0] {
		return err
	}
	s.log.Warn("pool capacity counter is already zero; deleting the instance without releasing a slot",
		"table", s.table, "pool", w.pool, "instance", w.name)
	return s.putInstance(ctx, w, item)
}

func (s *Store) releaseSlot(pool string) *types.Update {
	return &types.Update{
		TableName:                aws.String(s.table),
		Key:                      keyOf(poolKey(pool)),
		UpdateExpression:         aws.String("ADD #live :minus_one"),
		ConditionExpression:      aws.String("#live >= :one"),
		ExpressionAttributeNames: map[string]string{"#live": attrPoolLive},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":minus_one": &types.AttributeValueMemberN{Value: "-1"},
			":one":       &types.AttributeValueMemberN{Value: "1"},
		},
	}
}

// explain turns a failed instance condition into a *ConflictError, or into a
// plain error when the only difference is the pool: that is a caller bug,
// and retrying after a re-read would fail the same way forever.
func (w casWrite) explain(err error) error {
	stored, lost := storedOnConditionFailure(err)
	if !lost {
		return fmt.Errorf("update instance %q: %w", w.name, err)
	}
	if stringAttr(stored, attrStatus) == string(w.from) &&
		stringAttr(stored, attrVersion) == strconv.FormatInt(w.version, 10) &&
		stringAttr(stored, attrPool) != w.pool {
		return fmt.Errorf("update instance %q: pool cannot change (stored %q, given %q)", w.name, stringAttr(stored, attrPool), w.pool)
	}
	return &store.ConflictError{Instance: w.name, ExpectedStatus: w.from, ExpectedVersion: w.version}
}

// storedOnConditionFailure reports whether err is the instance's condition
// failing (alone, or as the first item of a transaction), with the stored
// item if there was one.
func storedOnConditionFailure(err error) (map[string]types.AttributeValue, bool) {
	if ccf, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		return ccf.Item, true
	}
	if canceled, ok := errors.AsType[*types.TransactionCanceledException](err); ok &&
		len(canceled.CancellationReasons) > 0 && reasonCode(canceled.CancellationReasons[0]) == reasonConditionFailed {
		return canceled.CancellationReasons[0].Item, true
	}
	return nil, false
}

// stringAttr returns a string or number attribute's text, or "".
func stringAttr(item map[string]types.AttributeValue, name string) string {
	switch v := item[name].(type) {
	case *types.AttributeValueMemberS:
		return v.Value
	case *types.AttributeValueMemberN:
		return v.Value
	}
	return ""
}
