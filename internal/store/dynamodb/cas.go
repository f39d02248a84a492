package dynamodb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runfleet/runfleet/internal/store"
)

// condition is a condition expression with its names and values.
type condition struct {
	expr   string
	names  map[string]string
	values map[string]types.AttributeValue
}

// casCondition is the condition of every record kind's compare-and-set on
// e: the stored item is at e.Version (0: there is none) and, for kinds
// with a status, at e.Status. extra is and-ed to it (an instance must also
// stay in its pool).
func casCondition(e store.Expectation, extra ...condition) condition {
	if e.Version == 0 {
		return condition{expr: "attribute_not_exists(#pk)", names: map[string]string{"#pk": attrPK}}
	}
	c := condition{
		expr:   "#version = :version",
		names:  map[string]string{"#version": attrVersion},
		values: map[string]types.AttributeValue{":version": &types.AttributeValueMemberN{Value: strconv.FormatInt(e.Version, 10)}},
	}
	if e.Status != "" {
		extra = append([]condition{{
			expr:   "#status = :from",
			names:  map[string]string{"#status": attrStatus},
			values: map[string]types.AttributeValue{":from": &types.AttributeValueMemberS{Value: e.Status}},
		}}, extra...)
	}
	for _, x := range extra {
		c.expr += " AND " + x.expr
		for k, v := range x.names {
			c.names[k] = v
		}
		for k, v := range x.values {
			c.values[k] = v
		}
	}
	return c
}

// conditionalPut is the Put of item under c, for PutItem or a
// transaction. The stored item comes back on failure at no read cost: it
// tells our own retried write from a lost race, and explains the loss.
func (s *Store) conditionalPut(item map[string]types.AttributeValue, c condition) *types.Put {
	return &types.Put{
		TableName:                           aws.String(s.table),
		Item:                                item,
		ConditionExpression:                 aws.String(c.expr),
		ExpressionAttributeNames:            c.names,
		ExpressionAttributeValues:           c.values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
}

// putIf is the one conditional PutItem of every record kind: one item, no
// transaction cost, retried while contended. PutItem has no idempotency
// token, so a failed condition that finds writeID stored is this very
// write, retried by the SDK after its response was lost: a success. Any
// other failed condition comes back as the SDK's error, with the stored
// item (storedOnConditionFailure), for the kind to explain.
//
// build makes the Put afresh for every attempt, as retryContention asks: a
// condition may compare the clock.
func (s *Store) putIf(ctx context.Context, build func() *types.Put, writeID string) error {
	err := retryContention(ctx, func() error {
		put := build()
		_, err := s.client.PutItem(ctx, &ddb.PutItemInput{
			TableName:                           put.TableName,
			Item:                                put.Item,
			ConditionExpression:                 put.ConditionExpression,
			ExpressionAttributeNames:            put.ExpressionAttributeNames,
			ExpressionAttributeValues:           put.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: put.ReturnValuesOnConditionCheckFailure,
		})
		return err
	})
	if stored, lost := storedOnConditionFailure(err); lost && stringAttr(stored, attrWriteID) == writeID {
		return nil
	}
	return err
}

// storedOnConditionFailure reports whether err is a record's condition
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

// documentKind is a record kind stored whole as one JSON attribute beside
// its version: records read and written whole, never queried into (spot
// breakers, leases, budgets). A name never written reads as its zero
// record.
type documentKind[R any] struct {
	kind   store.Kind
	prefix string
	attr   string
	// zero is the record of a name never written; version reads a
	// record's and setVersion sets it (for change).
	zero       func(name string) *R
	version    func(*R) int64
	setVersion func(*R, int64)
	// removableAt, when set, is when DynamoDB's TTL may delete the record
	// written at now (the zero time: never).
	removableAt func(r *R, now time.Time) time.Time
}

// get reads the record name with ConsistentRead: its caller is about to
// compare-and-set on what it reads.
func (k documentKind[R]) get(ctx context.Context, s *Store, name string) (*R, error) {
	out, err := s.client.GetItem(ctx, &ddb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(k.prefix + name),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", k.kind, name, err)
	}
	r := k.zero(name)
	if out.Item == nil {
		return r, nil
	}
	if err := json.Unmarshal([]byte(stringAttr(out.Item, k.attr)), r); err != nil {
		return nil, fmt.Errorf("read %s %s: %w", k.kind, name, err)
	}
	return r, nil
}

// compareAndSet writes next, whose version is already the next one, if
// the stored record is still at next's version minus one.
func (k documentKind[R]) compareAndSet(ctx context.Context, s *Store, name string, next *R) error {
	raw, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("write %s %s: %w", k.kind, name, err)
	}
	version := k.version(next)
	e := store.Expect(k.kind, name, "", version-1)
	writeID := requestToken()
	item := map[string]types.AttributeValue{
		attrPK:      &types.AttributeValueMemberS{Value: k.prefix + name},
		k.attr:      &types.AttributeValueMemberS{Value: string(raw)},
		attrVersion: &types.AttributeValueMemberN{Value: strconv.FormatInt(version, 10)},
		attrWriteID: &types.AttributeValueMemberS{Value: writeID},
	}
	if k.removableAt != nil {
		if at := k.removableAt(next, s.now()); !at.IsZero() {
			item[attrTTL] = &types.AttributeValueMemberN{Value: strconv.FormatInt(ttlSeconds(at), 10)}
		}
	}
	err = s.putIf(ctx, func() *types.Put { return s.conditionalPut(item, casCondition(e)) }, writeID)
	if _, lost := storedOnConditionFailure(err); lost {
		return e.Conflict()
	}
	if err != nil {
		return fmt.Errorf("write %s %s: %w", k.kind, name, err)
	}
	return nil
}

// change reads the record name, lets decide make its next record (nil:
// nothing to write) and writes that at the next version, compare-and-set
// on the version read. A race lost to another writer is read and decided
// again, after a jittered backoff (sleepBackoff), up to attempts times;
// then the last *store.ConflictError comes back, wrapped. decide may run
// more than once. It returns what it wrote (nil when nothing).
//
// Uncontended, a change costs one consistent GetItem and, when decide
// writes, one conditional PutItem; each lost race one more of each.
func (k documentKind[R]) change(ctx context.Context, s *Store, name string, attempts int, decide func(cur *R) (*R, error)) (*R, error) {
	var lost error
	for attempt := 1; attempt <= attempts; attempt++ {
		if attempt > 1 {
			if err := sleepBackoff(ctx, attempt-1); err != nil {
				return nil, fmt.Errorf("%s %q: %w (after: %w)", k.kind, name, err, lost)
			}
		}
		cur, err := k.get(ctx, s, name)
		if err != nil {
			return nil, err
		}
		next, err := decide(cur)
		if err != nil || next == nil {
			return nil, err
		}
		k.setVersion(next, k.version(cur)+1)
		err = k.compareAndSet(ctx, s, name, next)
		if err == nil {
			return next, nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return nil, err
		}
		lost = err
	}
	return nil, fmt.Errorf("%s %q: gave up after %d conflicting writes: %w", k.kind, name, attempts, lost)
}
