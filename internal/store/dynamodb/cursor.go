package dynamodb

import (
	"context"

	"github.com/runfleet/runfleet/internal/store"
)

// A named cursor is one META# item, like a spot breaker: the record as
// JSON (read and written whole) and its version, which the conditional
// put compares. The reconciler's role already reads and writes META#
// items, so no IAM change follows.
var cursorKind = documentKind[store.Cursor]{
	kind:    store.KindCursor,
	prefix:  prefixMeta + "cursor#",
	attr:    "cursor",
	zero:    func(name string) *store.Cursor { return &store.Cursor{Name: name} },
	version: func(c *store.Cursor) int64 { return c.Version },
}

// GetCursor implements store.Cursors, with ConsistentRead: the caller is
// about to compare-and-set on what it reads.
func (s *Store) GetCursor(ctx context.Context, name string) (*store.Cursor, error) {
	return cursorKind.get(ctx, s, name)
}

// PutCursor implements store.Cursors. A put whose response was lost and
// that the SDK retried is recognised as ours by its write id.
func (s *Store) PutCursor(ctx context.Context, next *store.Cursor) error {
	if err := store.CheckCursor(next); err != nil {
		return err
	}
	record := *next
	record.Version = next.Version + 1
	if err := cursorKind.compareAndSet(ctx, s, next.Name, &record); err != nil {
		return err
	}
	next.Version = record.Version
	return nil
}
