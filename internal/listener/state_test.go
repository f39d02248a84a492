package listener

import (
	"context"
	"errors"
	"testing"

	"github.com/runfleet/runfleet/internal/store"
)

// memCursors is a store.Cursors in memory, with the compare-and-set.
type memCursors map[string]store.Cursor

func (m memCursors) GetCursor(_ context.Context, name string) (*store.Cursor, error) {
	c := m[name]
	c.Name = name
	return &c, nil
}

func (m memCursors) PutCursor(_ context.Context, next *store.Cursor) error {
	if m[next.Name].Version != next.Version {
		return &store.ConflictError{Kind: store.KindCursor, Key: next.Name}
	}
	next.Version++
	m[next.Name] = *next
	return nil
}

// The state survives a round trip; an unreadable one is reported and then
// replaced by the next save; a save after another writer's is refused.
func TestStateIsSavedConditionally(t *testing.T) {
	ctx := context.Background()
	cursors := memCursors{}
	a := &stateStore{cursors: cursors, name: cursorName("p")}
	if st, err := a.load(ctx); err != nil || st != (state{}) {
		t.Fatalf("a fresh state: %+v, %v", st, err)
	}
	want := state{ScaleSetID: 3, SessionID: "s-1", LastMessageID: 9}
	if err := a.save(ctx, want); err != nil {
		t.Fatal(err)
	}
	b := &stateStore{cursors: cursors, name: cursorName("p")}
	if got, err := b.load(ctx); err != nil || got != want {
		t.Fatalf("loaded %+v, %v; want %+v", got, err, want)
	}
	if err := b.save(ctx, state{ScaleSetID: 3}); err != nil {
		t.Fatal(err)
	}
	var conflict *store.ConflictError
	if err := a.save(ctx, want); !errors.As(err, &conflict) {
		t.Fatalf("a stale writer's save: %v, want a conflict", err)
	}

	cursors[cursorName("q")] = store.Cursor{Name: cursorName("q"), Value: "{not json", Version: 4}
	c := &stateStore{cursors: cursors, name: cursorName("q")}
	if _, err := c.load(ctx); !errors.Is(err, errUnreadableState) {
		t.Fatalf("an unreadable state: %v", err)
	}
	if err := c.save(ctx, want); err != nil {
		t.Fatalf("replacing an unreadable state: %v", err)
	}
}
