package runner_test

import (
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

func TestSpotBreakerCountsDistinctInstancesWithinTheWindow(t *testing.T) {
	p := runner.SpotBreakerPolicy{Interruptions: 3, Window: 15 * time.Minute, Cooldown: 30 * time.Minute}
	t0 := time.Date(2031, 1, 1, 12, 0, 0, 0, time.UTC)
	b := &runner.SpotBreaker{Pool: "p"}
	record := func(b *runner.SpotBreaker, inst string, at time.Time) (*runner.SpotBreaker, bool) {
		t.Helper()
		next, tripped, ok := b.Record(p, inst, at, at)
		if !ok {
			t.Fatalf("%s at %v not counted", inst, at)
		}
		return next, tripped
	}
	b, _ = record(b, "a", t0)
	if _, _, ok := b.Record(p, "a", t0.Add(time.Minute), t0.Add(time.Minute)); ok {
		t.Fatal("the same instance was counted twice")
	}
	// "a" leaves the window before "c" arrives: two within it, closed.
	b, _ = record(b, "b", t0.Add(10*time.Minute))
	b, tripped := record(b, "c", t0.Add(16*time.Minute))
	if tripped || b.Open(t0.Add(16*time.Minute)) || len(b.Recent) != 2 {
		t.Fatalf("breaker after a, b, c spread over 16m: %+v tripped=%v; want closed with b and c", b, tripped)
	}
	at := t0.Add(17 * time.Minute)
	b, tripped = record(b, "d", at)
	if !tripped || !b.Open(at) || !b.OpenUntil.Equal(at.Add(30*time.Minute)) {
		t.Fatalf("third interruption within the window: %+v tripped=%v; want open for the cooldown", b, tripped)
	}
	if b.Open(at.Add(30 * time.Minute)) {
		t.Fatal("breaker still open after its cooldown")
	}
	if _, tripped, _ := b.Record(p, "e", at.Add(time.Minute), at.Add(time.Minute)); tripped {
		t.Fatal("an open breaker tripped again")
	}
}

func TestSpotBreakerDefaults(t *testing.T) {
	got := runner.SpotBreakerPolicy{}.WithDefaults()
	want := runner.SpotBreakerPolicy{Interruptions: 2, Window: 15 * time.Minute, Cooldown: 30 * time.Minute}
	if got != want {
		t.Fatalf("defaults = %+v, want %+v", got, want)
	}
}
