package budget_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/budget"
	"github.com/runfleet/runfleet/internal/testclock"
)

// Calls that keep turns, held back by the budget, are given turns in the
// order they asked; each goes in its turn without taking points again;
// and every 60 s window still stays within the limit, turns or not.
func TestTurnsGoInTheOrderAskedWithinTheLimit(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		l := budget.Limits{PointsPerMinute: 300 + rng.IntN(600)}
		clock := testclock.At(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
		b := newBudget(t, clock, l)
		type call struct {
			asked int
			turn  *github.Turn
		}
		var waiting []call
		var order []int
		var spends []time.Time
		// A burst of 300 creates asking within 20 seconds: those the
		// bucket holds go, the others get turns.
		for i := range 300 {
			clock.Advance(time.Duration(rng.IntN(130)) * time.Millisecond)
			release, err := b.Wait(github.WithTurns(context.Background()), budget.WriteCost)
			var rl *github.RateLimitError
			switch {
			case err == nil:
				order, spends = append(order, i), append(spends, clock.Now())
				release()
			case errors.As(err, &rl) && rl.Turn != nil:
				if !rl.Paced || !rl.RetryAt.Equal(rl.Turn.At) {
					t.Fatalf("seed %d: turn error %+v", seed, rl)
				}
				waiting = append(waiting, call{i, rl.Turn})
			default:
				t.Fatalf("seed %d: call %d: %v", seed, i, err)
			}
		}
		// Each comes back in its turn (in any order of coming back; the
		// queue's delays bring them at their times).
		rng.Shuffle(len(waiting), func(i, j int) { waiting[i], waiting[j] = waiting[j], waiting[i] })
		byTime := append([]call(nil), waiting...)
		for len(byTime) > 0 {
			next := 0
			for i, c := range byTime {
				if c.turn.At.Before(byTime[next].turn.At) {
					next = i
				}
			}
			c := byTime[next]
			byTime = append(byTime[:next], byTime[next+1:]...)
			clock.AdvanceTo(c.turn.At)
			release, err := b.Wait(github.WithTurn(context.Background(), c.turn), budget.WriteCost)
			if err != nil {
				t.Fatalf("seed %d: call %d in its turn: %v", seed, c.asked, err)
			}
			order, spends = append(order, c.asked), append(spends, clock.Now())
			release()
		}
		for i := 1; i < len(order); i++ {
			if order[i] < order[i-1] {
				t.Fatalf("seed %d: call %d went after call %d; want the order they asked in", seed, order[i-1], order[i])
			}
		}
		for i, s := range spends {
			n := 0
			for _, o := range spends[i:] {
				if o.Sub(s) < time.Minute {
					n++
				}
			}
			if n*budget.WriteCost > l.PointsPerMinute {
				t.Fatalf("seed %d: %d points in the 60 s from %s, limit %d", seed, n*budget.WriteCost, s, l.PointsPerMinute)
			}
		}
		if st := b.Stats(); st.Turns != int64(len(waiting)) || st.TurnsTaken != int64(len(waiting)) {
			t.Fatalf("seed %d: stats %+v; want %d turns given and taken", seed, st, len(waiting))
		}
	}
}

// A caller that does not keep turns is refused as before, and a later
// call without a turn does not go ahead of the turns given.
func TestCallsWithoutTurnsQueueBehindTheTurnsGiven(t *testing.T) {
	clock := testclock.At(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	b := newBudget(t, clock, budget.Limits{PointsPerMinute: 12, Burst: 5})
	release, err := b.Wait(github.WithTurns(context.Background()), budget.WriteCost)
	if err != nil {
		t.Fatal(err)
	}
	release()
	_, err = b.Wait(github.WithTurns(context.Background()), budget.WriteCost)
	var rl *github.RateLimitError
	if !errors.As(err, &rl) || rl.Turn == nil {
		t.Fatalf("second call: %v; want a turn", err)
	}
	_, err = b.Wait(context.Background(), budget.ReadCost)
	var plain *github.RateLimitError
	if !errors.As(err, &plain) || plain.Turn != nil || !plain.RetryAt.After(rl.Turn.At) {
		t.Fatalf("a call without turns: %v; want it refused until after the turn at %s", err, rl.Turn.At)
	}
	// A turn used early is handed back, kept.
	_, err = b.Wait(github.WithTurn(context.Background(), rl.Turn), budget.WriteCost)
	var early *github.RateLimitError
	if !errors.As(err, &early) || early.Turn == nil || !early.Turn.At.Equal(rl.Turn.At) {
		t.Fatalf("the turn used early: %v; want it handed back", err)
	}
	clock.AdvanceTo(rl.Turn.At)
	if _, err := b.Wait(github.WithTurn(context.Background(), early.Turn), budget.WriteCost); err != nil {
		t.Fatalf("the turn at its time: %v", err)
	}
	// Under one context a turn is spent once: the next call takes points.
	ctx := github.WithTurn(context.Background(), early.Turn)
	for range 2 {
		release, err := b.Wait(ctx, budget.WriteCost)
		if err != nil {
			t.Fatal(err)
		}
		release()
		clock.Advance(time.Minute)
	}
	if st := b.Stats(); st.TurnsTaken != 2 {
		t.Fatalf("turns taken %d; want 2 (the first call under each context)", st.TurnsTaken)
	}
}

// A penalty GitHub imposed holds a call in its turn too.
func TestPenaltyHoldsACallInItsTurn(t *testing.T) {
	clock := testclock.At(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	b := newBudget(t, clock, budget.Limits{PointsPerMinute: 12, Burst: 5})
	if release, err := b.Wait(github.WithTurns(context.Background()), budget.WriteCost); err == nil {
		release()
	}
	_, err := b.Wait(github.WithTurns(context.Background()), budget.WriteCost)
	var rl *github.RateLimitError
	if !errors.As(err, &rl) || rl.Turn == nil {
		t.Fatalf("want a turn, got %v", err)
	}
	b.Refuse(context.Background(), budget.Refusal{Secondary: true, RetryAfter: time.Hour, Message: "secondary rate limit"})
	clock.AdvanceTo(rl.Turn.At)
	_, err = b.Wait(github.WithTurn(context.Background(), rl.Turn), budget.WriteCost)
	var held *github.RateLimitError
	if !errors.As(err, &held) || held.Paced || held.Turn != nil {
		t.Fatalf("in its turn during a penalty: %v; want held", err)
	}
}

// A turn the process before this one was given is void here: its points
// were promised from a bucket that is gone, so the call queues again like
// any other instead of going unpaid (past GitHub's limit).
func TestATurnFromABudgetGoneSinceIsVoid(t *testing.T) {
	clock := testclock.At(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	before := newBudget(t, clock, budget.Limits{PointsPerMinute: 12, Burst: 5})
	if release, err := before.Wait(github.WithTurns(context.Background()), budget.WriteCost); err == nil {
		release()
	}
	_, err := before.Wait(github.WithTurns(context.Background()), budget.WriteCost)
	var rl *github.RateLimitError
	if !errors.As(err, &rl) || rl.Turn == nil {
		t.Fatalf("want a turn, got %v", err)
	}
	clock.Advance(time.Millisecond)
	after := newBudget(t, clock, budget.Limits{PointsPerMinute: 12, Burst: 5}) // the restarted process's
	clock.AdvanceTo(rl.Turn.At)
	// The new budget has room (a minute passed): the call takes its
	// points, as any call would.
	release, err := after.Wait(github.WithTurn(context.Background(), rl.Turn), budget.WriteCost)
	if err != nil {
		t.Fatalf("the old turn in a new budget: %v; want the call to take points like any", err)
	}
	release()
	if st := after.Stats(); st.TurnsVoid != 1 || st.TurnsTaken != 0 {
		t.Fatalf("stats %+v; want one void turn and none taken", st)
	}
}

// A turn's points are counted at its time. A call that comes in it later
// than LateGrace — its message held by a store outage and delivered with
// the others held by it — goes as any call and takes points again:
// honoured, every turn the outage held would go in one burst on top of
// the points the bucket counted since, past GitHub's limit (a simulation
// seed saw 62 points in a minute against a limit of 60). Within the grace
// it goes in its turn, taking nothing.
func TestALateTurnIsQueuedAgain(t *testing.T) {
	clock := testclock.At(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	l := budget.Limits{PointsPerMinute: 12, Burst: 5}
	b := newBudget(t, clock, l)
	grace := l.WithDefaults().LateGrace()
	if want := 300 * time.Second / 7; grace.Round(time.Millisecond) != want.Round(time.Millisecond) {
		t.Fatalf("late grace %s; want %s, the time a burst of 5 takes to refill at 7 points a minute", grace, want)
	}
	release, err := b.Wait(github.WithTurns(context.Background()), budget.WriteCost)
	if err != nil {
		t.Fatal(err)
	}
	release()
	var turns []*github.Turn
	for range 2 {
		_, err := b.Wait(github.WithTurns(context.Background()), budget.WriteCost)
		var rl *github.RateLimitError
		if !errors.As(err, &rl) || rl.Turn == nil {
			t.Fatalf("%v; want a turn", err)
		}
		turns = append(turns, rl.Turn)
	}

	clock.AdvanceTo(turns[0].At.Add(grace))
	release, err = b.Wait(github.WithTurn(context.Background(), turns[0]), budget.WriteCost)
	if err != nil {
		t.Fatalf("a turn used as late as the grace: %v; want it to go in its turn", err)
	}
	release()

	clock.AdvanceTo(turns[1].At.Add(grace + time.Second))
	full, err := b.ReadyAt(context.Background(), budget.WriteCost)
	if err != nil || !full.Equal(clock.Now()) {
		t.Fatalf("the bucket before the late call: ready at %s (%v); want now, %s", full, err, clock.Now())
	}
	release, err = b.Wait(github.WithTurn(github.WithTurns(context.Background()), turns[1]), budget.WriteCost)
	if err != nil {
		t.Fatalf("a late turn with the bucket full: %v; want it to go, taking points", err)
	}
	release()
	if next, _ := b.ReadyAt(context.Background(), budget.WriteCost); !next.After(clock.Now()) {
		t.Fatalf("after the late call the next write is ready at %s, now: the late call took no points", next)
	}
	if st := b.Stats(); st.TurnsTaken != 1 || st.TurnsLate != 1 {
		t.Fatalf("turns taken %d, late %d; want 1 and 1", st.TurnsTaken, st.TurnsLate)
	}
}
