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

	"github.com/runfleet/runfleet/internal/store"
)

// A named cursor is one META# item, like a spot breaker: the record as
// JSON (read and written whole) and its version, which the conditional
// put compares. The reconciler's role already reads and writes META#
// items, so no IAM change follows.
const attrCursor = "cursor"

func cursorKey(name string) string { return prefixMeta + "cursor#" + name }

// GetCursor implements store.Cursors, with ConsistentRead: the caller is
// about to compare-and-set on what it reads.
func (s *Store) GetCursor(ctx context.Context, name string) (*store.Cursor, error) {
	out, err := s.client.GetItem(ctx, &ddb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(cursorKey(name)),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("read cursor %s: %w", name, err)
	}
	c := &store.Cursor{Name: name}
	if out.Item == nil {
		return c, nil
	}
	if err := json.Unmarshal([]byte(stringAttr(out.Item, attrCursor)), c); err != nil {
		return nil, fmt.Errorf("read cursor %s: %w", name, err)
	}
	return c, nil
}

// PutCursor implements store.Cursors. A put whose response was lost and
// that the SDK retried finds its own write and reports a conflict: the
// caller re-reads, and finds what it meant to write.
func (s *Store) PutCursor(ctx context.Context, next *store.Cursor) error {
	if err := store.CheckCursor(next); err != nil {
		return err
	}
	expected := next.Version
	record := *next
	record.Version = expected + 1
	raw, err := json.Marshal(record)
	if err != nil {
		return fmt.Errorf("write cursor %s: %w", next.Name, err)
	}
	in := &ddb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			attrPK:      &types.AttributeValueMemberS{Value: cursorKey(next.Name)},
			attrCursor:  &types.AttributeValueMemberS{Value: string(raw)},
			attrVersion: &types.AttributeValueMemberN{Value: strconv.FormatInt(record.Version, 10)},
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
		return &store.CursorConflictError{Name: next.Name, ExpectedVersion: expected}
	}
	if err != nil {
		return fmt.Errorf("write cursor %s: %w", next.Name, err)
	}
	next.Version = record.Version
	return nil
}
