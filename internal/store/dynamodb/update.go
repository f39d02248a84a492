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
		Expectation: store.Expect(store.KindInstance, next.Name, from, next.Version),
		pool:        next.Pool,
		writeID:     requestToken(),
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

// casWrite is one compare-and-set of an instance: what the stored
// instance must still be for the write to win, and the write's own id.
type casWrite struct {
	store.Expectation
	pool    string
	writeID string
}

// put is the write as a Put of item: the generic compare-and-set, and the
// pool must not change either.
func (s *Store) put(w casWrite, item map[string]types.AttributeValue) *types.Put {
	return s.conditionalPut(item, casCondition(w.Expectation, condition{
		expr:   "#pool = :pool",
		names:  map[string]string{"#pool": attrPool},
		values: map[string]types.AttributeValue{":pool": &types.AttributeValueMemberS{Value: w.pool}},
	}))
}

// putInstance is a plain conditional PutItem: one item, no transaction cost.
func (s *Store) putInstance(ctx context.Context, w casWrite, item map[string]types.AttributeValue) error {
	return s.putIf(ctx, func() *types.Put { return s.put(w, item) }, w.writeID)
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
				{Put: s.put(w, item)},
				{Update: s.releaseSlot(w.pool)},
			},
		})
		return err
	})
	if failed, cancelled := conditionFailed(err); !cancelled || failed[0] {
		return err
	}
	s.log.Warn("pool capacity counter is already zero; deleting the instance without releasing a slot",
		"table", s.table, "pool", w.pool, "instance", w.Key)
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
		return fmt.Errorf("update instance %q: %w", w.Key, err)
	}
	if w.Met(stored != nil, stringAttr(stored, attrStatus), storedVersion(stored)) && stringAttr(stored, attrPool) != w.pool {
		return fmt.Errorf("update instance %q: pool cannot change (stored %q, given %q)", w.Key, stringAttr(stored, attrPool), w.pool)
	}
	return w.Conflict()
}

// storedVersion is a stored item's version, 0 if it has none.
func storedVersion(item map[string]types.AttributeValue) int64 {
	v, _ := strconv.ParseInt(stringAttr(item, attrVersion), 10, 64)
	return v
}
