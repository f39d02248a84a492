package bolt

import (
	"context"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/boltcommit"
	"github.com/runfleet/runfleet/internal/store"
)

// cursorKey is a named cursor in the meta bucket: a handful of small
// records, like the spot breakers, so no bucket (and no schema change) of
// their own.
func cursorKey(name string) []byte { return []byte("cursor/" + name) }

// GetCursor implements store.Cursors.
func (s *Store) GetCursor(ctx context.Context, name string) (*store.Cursor, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: cursor %s: %w", name, err)
	}
	c := &store.Cursor{Name: name}
	err := s.db.View(func(tx *bbolt.Tx) error {
		raw := tx.Bucket(bucketMeta).Get(cursorKey(name))
		if raw == nil {
			return nil
		}
		return json.Unmarshal(raw, c)
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: cursor %s: %w", name, err)
	}
	return c, nil
}

// PutCursor implements store.Cursors.
func (s *Store) PutCursor(ctx context.Context, next *store.Cursor) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt: cursor: %w", err)
	}
	if err := store.CheckCursor(next); err != nil {
		return err
	}
	expected := next.Version
	record := *next
	record.Version = expected + 1
	raw, err := json.Marshal(record)
	if err != nil {
		return fmt.Errorf("bolt: cursor %s: %w", next.Name, err)
	}
	err = s.update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		var stored store.Cursor
		if cur := meta.Get(cursorKey(next.Name)); cur != nil {
			if err := json.Unmarshal(cur, &stored); err != nil {
				return boltcommit.Unchanged(err)
			}
		}
		if stored.Version != expected {
			return boltcommit.Unchanged(&store.CursorConflictError{Name: next.Name, ExpectedVersion: expected})
		}
		return meta.Put(cursorKey(next.Name), raw)
	})
	if err != nil {
		return err
	}
	next.Version = record.Version
	return nil
}
