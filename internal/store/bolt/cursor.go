package bolt

import (
	"context"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/store"
)

// GetCursor implements store.Cursors.
func (s *Store) GetCursor(ctx context.Context, name string) (*store.Cursor, error) {
	return cursorKind.find(ctx, s, name)
}

// PutCursor implements store.Cursors.
func (s *Store) PutCursor(ctx context.Context, next *store.Cursor) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt: cursor: %w", err)
	}
	if err := store.CheckCursor(next); err != nil {
		return err
	}
	record := *next
	record.Version = next.Version + 1
	err := s.update(func(tx *bbolt.Tx) error {
		return cursorKind.compareAndSet(tx, store.Expect(store.KindCursor, next.Name, "", next.Version), &record)
	})
	if err != nil {
		return err
	}
	next.Version = record.Version
	return nil
}
