package store

import (
	"context"
	"fmt"
	"time"
)

// Cursors keep named positions in something outside runfleet that a
// process reads a little at a time — GitHub's webhook delivery log — so
// the next process (a fresh Lambda invocation, serve after a restart)
// continues where the last one stopped. One small record per name,
// written by compare-and-set, as the spot breaker is.
type Cursors interface {
	// GetCursor returns the named cursor; one never written is a zero
	// record of that name (Version 0, Value ""), never an error.
	GetCursor(ctx context.Context, name string) (*Cursor, error)
	// PutCursor writes next if the stored cursor still has version
	// next.Version (0: none stored); on success next.Version is
	// incremented. A lost race returns a *ConflictError (KindCursor) and
	// writes nothing.
	PutCursor(ctx context.Context, next *Cursor) error
}

// Cursor is a named position. Value is opaque to the store: its owner
// encodes what it needs (the delivery log's is JSON).
type Cursor struct {
	Name      string    `json:"name"`
	Value     string    `json:"value"`
	Version   int64     `json:"version"`
	UpdatedAt time.Time `json:"updated_at"`
}

// CheckCursor refuses a cursor no one could read back.
func CheckCursor(c *Cursor) error {
	if c == nil || c.Name == "" {
		return fmt.Errorf("store: cursor: no name")
	}
	if c.Version < 0 {
		return fmt.Errorf("store: cursor %q: negative version %d", c.Name, c.Version)
	}
	return nil
}
