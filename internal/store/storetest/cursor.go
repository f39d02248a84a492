package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/store"
)

var cursorTests = []contractTest{
	{"Cursor/UnknownNameIsZero", cursorUnknownNameIsZero},
	{"Cursor/RoundTripAndCompareAndSet", cursorRoundTripAndCompareAndSet},
	{"Cursor/NamesAreSeparate", cursorNamesAreSeparate},
	{"Cursor/OneWinnerPerVersion", raceOneCursorWinnerPerVersion},
}

func cursorUnknownNameIsZero(t *testing.T, s store.Store) {
	c, err := s.GetCursor(context.Background(), "never-written")
	if err != nil {
		t.Fatalf("GetCursor: %v", err)
	}
	if c.Name != "never-written" || c.Version != 0 || c.Value != "" || !c.UpdatedAt.IsZero() {
		t.Fatalf("cursor never written = %+v, want a zero record of that name", c)
	}
}

func cursorRoundTripAndCompareAndSet(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := time.Date(2031, time.May, 1, 10, 0, 0, 123_000_000, time.FixedZone("UTC+1", 3600))
	first := &store.Cursor{Name: "deliveries", Value: `{"after":42}`, UpdatedAt: at}
	if err := s.PutCursor(ctx, first); err != nil {
		t.Fatalf("first PutCursor: %v", err)
	}
	if first.Version != 1 {
		t.Fatalf("Version after the first write = %d, want 1", first.Version)
	}
	got, err := s.GetCursor(ctx, "deliveries")
	if err != nil {
		t.Fatal(err)
	}
	requireSameCursor(t, first, got)

	// A second creator (Version 0) and a stale writer both lose, and change
	// nothing: two reconcilers never move the cursor over each other.
	late := &store.Cursor{Name: "deliveries", Value: `{"after":1}`}
	if err := s.PutCursor(ctx, late); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second create: %v, want ErrConflict", err)
	}
	if late.Version != 0 {
		t.Fatalf("a refused write changed the caller's Version to %d", late.Version)
	}
	next := *got
	next.Value, next.UpdatedAt = `{"after":43}`, at.Add(time.Minute)
	if err := s.PutCursor(ctx, &next); err != nil {
		t.Fatalf("compare-and-set on the version read: %v", err)
	}
	stale := *got
	stale.Value = `{"after":0}`
	var ce *store.ConflictError
	if err := s.PutCursor(ctx, &stale); !errors.As(err, &ce) || ce.Kind != store.KindCursor || ce.Key != "deliveries" || ce.ExpectedVersion != 1 {
		t.Fatalf("stale write: %v, want a *ConflictError of the cursor at version 1", err)
	}
	got, err = s.GetCursor(ctx, "deliveries")
	if err != nil {
		t.Fatal(err)
	}
	requireSameCursor(t, &next, got)
	if err := s.PutCursor(ctx, &store.Cursor{}); err == nil || errors.Is(err, store.ErrConflict) {
		t.Fatalf("a cursor without a name: %v, want a refusal that is not a conflict", err)
	}
}

func cursorNamesAreSeparate(t *testing.T, s store.Store) {
	ctx := context.Background()
	if err := s.PutCursor(ctx, &store.Cursor{Name: "a", Value: "x"}); err != nil {
		t.Fatal(err)
	}
	b, err := s.GetCursor(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if b.Version != 0 || b.Value != "" {
		t.Fatalf("cursor b read cursor a: %+v", b)
	}
}

func requireSameCursor(t *testing.T, want, got *store.Cursor) {
	t.Helper()
	if got.Name != want.Name || got.Value != want.Value || got.Version != want.Version || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("cursor = %+v, want %+v", got, want)
	}
}

// Two reconcile passes (a Lambda invocation overlapping the next) moving
// the cursor from the same read make one write; the others re-read.
func raceOneCursorWinnerPerVersion(t *testing.T, s store.Store) {
	ctx := context.Background()
	writes, winner := versionRace(t,
		func() (*store.Cursor, error) { return s.GetCursor(ctx, "raced") },
		func(i int, read *store.Cursor) (*store.Cursor, error) {
			next := *read
			next.Value = fmt.Sprintf(`{"pass":%d}`, i)
			return &next, nil
		},
		func(next *store.Cursor) error { return s.PutCursor(ctx, next) },
		isConflict(store.KindCursor, "raced", "", 0))
	got, err := s.GetCursor(ctx, "raced")
	if err != nil {
		t.Fatal(err)
	}
	requireSameCursor(t, writes[winner], got)
}
