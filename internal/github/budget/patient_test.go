package budget_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/budget"
	"github.com/runfleet/runfleet/internal/testclock"
)

// A token request on a new (empty) budget whose longest wait is shorter
// than the refill: Wait would give the caller a turn; WaitPatiently waits
// for the points instead, gives no turn, and leaves nothing promised
// beyond its own points. Points further than its patience are refused.
func TestWaitPatientlyWaitsInsteadOfTakingATurn(t *testing.T) {
	clock := testclock.At(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	b, err := budget.New(budget.Options{Name: "app:1", Limits: budget.Limits{MaxWait: 100 * time.Millisecond}, Now: clock.Now, Sleep: clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	ctx := github.WithTurns(context.Background())
	start := clock.Now()
	release, err := b.WaitPatiently(ctx, budget.WriteCost, time.Minute)
	if err != nil {
		t.Fatalf("WaitPatiently: %v", err)
	}
	release()
	if waited := clock.Now().Sub(start); waited <= 100*time.Millisecond {
		t.Fatalf("waited %s; want the refill, past the longest wait", waited)
	}
	if s := b.Stats(); s.Turns != 0 {
		t.Fatalf("%d turns given, want none", s.Turns)
	}
	if at, _ := b.ReadyAt(ctx, 1); at.After(clock.Now().Add(100 * time.Millisecond)) {
		t.Fatalf("a point is next ready at %s: more than the token's points were promised", at.Sub(clock.Now()))
	}

	// Points further off than the patience: refused, paced.
	_, err = b.WaitPatiently(ctx, budget.WriteCost*20, time.Second)
	var paced *github.RateLimitError
	if !errors.As(err, &paced) || !paced.Paced || paced.Turn != nil {
		t.Fatalf("points beyond the patience: %v, want a paced refusal without a turn", err)
	}
}
