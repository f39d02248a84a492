package testclock_test

import (
	"context"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/testclock"
)

var start = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// A stopped clock reads exactly where it was put (or, with the clocks
// moved by ShiftEnv, the same weekday and time in the moved week) and
// where it was moved.
func TestStoppedClockMovesOnlyWhenTold(t *testing.T) {
	c := testclock.At(start)
	start := c.Now()
	if given := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC); testclock.Shift() == 0 && !start.Equal(given) {
		t.Fatalf("Now() = %v, want %v", start, given)
	}
	c.Advance(time.Hour)
	if err := c.Sleep(context.Background(), time.Minute); err != nil {
		t.Fatal(err)
	}
	want := start.Add(time.Hour + time.Minute)
	if got := c.Now(); !got.Equal(want) {
		t.Fatalf("after Advance and Sleep Now() = %v, want %v", got, want)
	}
	c.AdvanceTo(start) // never back
	if got := c.Now(); !got.Equal(want) {
		t.Fatalf("AdvanceTo an earlier time moved the clock to %v", got)
	}
	c.AdvanceTo(want.Add(time.Second))
	if got := c.Now(); !got.Equal(want.Add(time.Second)) {
		t.Fatalf("AdvanceTo: Now() = %v, want %v", got, want.Add(time.Second))
	}
}

// The zero clock runs with real time, ahead by what it was moved.
func TestZeroClockRunsAhead(t *testing.T) {
	var c testclock.Clock
	before := time.Now()
	c.Advance(time.Hour)
	if got := c.Now(); got.Before(before.Add(time.Hour)) || got.After(time.Now().Add(time.Hour)) {
		t.Fatalf("Now() = %v, want real time plus an hour", got)
	}
	target := time.Now().Add(3 * time.Hour)
	c.AdvanceTo(target)
	if got := c.Now(); got.Before(target) {
		t.Fatalf("after AdvanceTo(%v) Now() = %v", target, got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Hour); err == nil {
		t.Fatal("Sleep on an ended context returned nil")
	}
}
