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

// newBudget is a budget that has been idle a minute: its bucket is full.
func newBudget(t *testing.T, clock *testclock.Clock, l budget.Limits) *budget.Budget {
	t.Helper()
	b, err := budget.New(budget.Options{Name: "test", Limits: l, Now: clock.Now, Sleep: clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	return b
}

// A new budget starts empty: the process does not know what was spent
// with the credential in the last minute (by the process it replaces),
// so its first call waits for the refill rather than adding a burst.
func TestANewBudgetStartsEmpty(t *testing.T) {
	clock := testclock.At(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	b, err := budget.New(budget.Options{Name: "test", Now: clock.Now, Sleep: clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	start := clock.Now()
	release, err := b.Wait(context.Background(), budget.WriteCost)
	if err != nil {
		t.Fatal(err)
	}
	release()
	l := b.Limits()
	want := time.Duration(float64(budget.WriteCost) / (float64(l.PointsPerMinute-l.Burst) / 60) * float64(time.Second))
	if waited := clock.Now().Sub(start); waited < want-time.Millisecond {
		t.Fatalf("the first call went after %s; want it to wait for the refill (%s)", waited, want)
	}
}

// The budget's promise: over any 60 s window, whatever the calls and
// their timing, the points spent stay within PointsPerMinute — not only on
// average. A window's worst case starts at a spend, so checking the
// windows that start at each spend checks them all.
func TestPointsInAnySixtySecondWindowStayUnderTheLimit(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		l := budget.Limits{PointsPerMinute: 50 + rng.IntN(851), MaxWait: time.Hour}
		if rng.IntN(2) == 0 {
			l.Burst = budget.WriteCost + rng.IntN(l.PointsPerMinute/3)
		}
		clock := &testclock.Clock{}
		b := newBudget(t, clock, l)
		type spent struct {
			at   time.Time
			cost int
		}
		var spends []spent
		for range 600 {
			// Bursts, lulls and everything between.
			clock.Advance(time.Duration(rng.ExpFloat64() * float64(time.Duration(rng.IntN(3000))*time.Millisecond)))
			cost := budget.ReadCost
			if rng.IntN(3) == 0 {
				cost = budget.WriteCost
			}
			release, err := b.Wait(context.Background(), cost)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			spends = append(spends, spent{clock.Now(), cost})
			release()
		}
		for i, s := range spends {
			sum := 0
			for _, o := range spends[i:] {
				if o.at.Sub(s.at) > time.Minute {
					break
				}
				sum += o.cost
			}
			if sum > l.PointsPerMinute {
				t.Fatalf("seed %d (limits %+v): %d points in the 60 s from %s, limit %d", seed, b.Limits(), sum, s.at, l.PointsPerMinute)
			}
		}
	}
}

func TestBurstIsAFewSecondsNotAMinute(t *testing.T) {
	clock := &testclock.Clock{}
	b := newBudget(t, clock, budget.Limits{})
	l := b.Limits()
	if l.PointsPerMinute < budget.GitHubPointsPerMinute*8/10 || l.PointsPerMinute > budget.GitHubPointsPerMinute {
		t.Errorf("default %d points/min: want 80–100%% of GitHub's %d", l.PointsPerMinute, budget.GitHubPointsPerMinute)
	}
	if l.Burst*10 > l.PointsPerMinute {
		t.Errorf("burst %d is more than 6 s of the minute's %d", l.Burst, l.PointsPerMinute)
	}
	start := clock.Now()
	for range 20 { // 100 points of writes
		release, err := b.Wait(context.Background(), budget.WriteCost)
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	if took := clock.Now().Sub(start); took < 4*time.Second {
		t.Errorf("100 points went in %s: the budget did not spread them", took)
	}
}

func TestInFlightCap(t *testing.T) {
	b := newBudget(t, &testclock.Clock{}, budget.Limits{MaxInFlight: 2})
	var releases []func()
	for range 2 {
		release, err := b.Wait(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.Wait(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("third call in flight: %v, want it to wait for a slot", err)
	}
	releases[0]()
	releases[0]() // twice is harmless
	release, err := b.Wait(context.Background(), 1)
	if err != nil {
		t.Fatalf("after a release: %v", err)
	}
	release()
	releases[1]()
}

func TestNoCallDuringAPenaltyAndRefusalsExtendIt(t *testing.T) {
	clock := &testclock.Clock{}
	b := newBudget(t, clock, budget.Limits{})
	ctx := context.Background()
	rl := b.Refuse(ctx, budget.Refusal{Secondary: true, RetryAfter: time.Minute, Message: "secondary"})
	if want := clock.Now().Add(time.Minute); rl.RetryAt.Before(want.Add(-time.Second)) || rl.RetryAt.After(want) {
		t.Fatalf("RetryAt %s, want about %s", rl.RetryAt, want)
	}
	for _, step := range []time.Duration{0, 30 * time.Second, 29 * time.Second} {
		clock.Advance(step)
		_, err := b.Wait(ctx, 1)
		var got *github.RateLimitError
		if !errors.As(err, &got) || got.Paced || !got.Secondary || !got.RetryAt.Equal(rl.RetryAt) {
			t.Fatalf("%s into the penalty: %v, want the penalty until %s", step, err, rl.RetryAt)
		}
		if at, _ := b.ReadyAt(ctx, 1); at.Before(rl.RetryAt) {
			t.Errorf("ReadyAt %s during a penalty until %s", at, rl.RetryAt)
		}
	}
	// Without retry-after, a minute doubling: the later refusal extends.
	longer := b.Refuse(ctx, budget.Refusal{Secondary: true})
	shorter := b.Refuse(ctx, budget.Refusal{Secondary: true, RetryAfter: time.Second})
	if pen := b.Penalty(ctx); pen == nil || !pen.RetryAt.Equal(longer.RetryAt) || !shorter.RetryAt.Before(longer.RetryAt) {
		t.Fatalf("penalty %v after refusals until %s and %s", pen, longer.RetryAt, shorter.RetryAt)
	}
	clock.Advance(longer.RetryAt.Sub(clock.Now()) + time.Millisecond)
	release, err := b.Wait(ctx, 1)
	if err != nil {
		t.Fatalf("after the penalty: %v", err)
	}
	release()
	if s := b.Stats(); s.Refusals != 3 || s.Held != 3 {
		t.Errorf("stats %+v, want 3 refusals and 3 calls held", s)
	}
}

func TestPrimaryBudgetFromHeaders(t *testing.T) {
	clock := &testclock.Clock{}
	b := newBudget(t, clock, budget.Limits{})
	ctx := context.Background()
	reset := clock.Now().Add(10 * time.Minute).Truncate(time.Second)
	b.Answered(ctx, 2, reset, true)
	b.Answered(ctx, 5, reset, true) // an answer overtaken by a later one
	for range 2 {
		release, err := b.Wait(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		release()
	}
	_, err := b.Wait(ctx, 1)
	var rl *github.RateLimitError
	if !errors.As(err, &rl) || !rl.Paced || !rl.RetryAt.Equal(reset) {
		t.Fatalf("with the primary budget spent: %v, want paced until %s", err, reset)
	}
	clock.Advance(11 * time.Minute)
	release, err := b.Wait(ctx, 1)
	if err != nil {
		t.Fatalf("after the reset: %v", err)
	}
	release()
}

func TestLongWaitsAreHandedBackAndWaitsCancel(t *testing.T) {
	clock := &testclock.Clock{}
	b, err := budget.New(budget.Options{Name: "test", Limits: budget.Limits{PointsPerMinute: 60, Burst: 5, MaxWait: 20 * time.Second}, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	release, err := b.Wait(ctx, budget.WriteCost) // the whole burst
	if err != nil {
		t.Fatal(err)
	}
	release()
	ready, _ := b.ReadyAt(ctx, budget.WriteCost)
	if d := ready.Sub(clock.Now()); d < 5*time.Second || d > 6*time.Second {
		t.Fatalf("ReadyAt in %s, want the 5.45 s the refill takes", d)
	}
	// The next write waits ~5 s (real time: this budget sleeps on a
	// timer); cancelling ends the wait at once.
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	// "At once" is judged against the 5 s the wait would take, with room
	// for a busy machine: not a speed, the difference between two outcomes.
	if _, err := b.Wait(cctx, budget.WriteCost); !errors.Is(err, context.Canceled) || time.Since(start) > 4*time.Second {
		t.Fatalf("cancelled wait: %v after %s", err, time.Since(start))
	}
	// The refund gave the points back: the next write's turn is as before.
	if again, _ := b.ReadyAt(ctx, budget.WriteCost); again.Sub(ready) > 100*time.Millisecond {
		t.Errorf("after a cancelled wait the next write goes at %s, before it at %s: points lost", again, ready)
	}
	// A caller whose deadline comes before its turn is told its turn at
	// once, instead of timing out.
	dctx, dcancel := context.WithTimeout(ctx, time.Second)
	defer dcancel()
	start = time.Now()
	_, err = b.Wait(dctx, budget.WriteCost)
	var rl *github.RateLimitError
	if !errors.As(err, &rl) || !rl.Paced || rl.RetryAt.Before(ready) || time.Since(start) > 4*time.Second {
		t.Fatalf("wait past the deadline: %v, want paced until about %s, at once", err, ready)
	}
	if s := b.Stats(); s.Paced != 1 {
		t.Errorf("stats %+v, want 1 paced", s)
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		l  budget.Limits
		ok bool
	}{
		{budget.Limits{}, true},
		{budget.Limits{PointsPerMinute: 900, MaxInFlight: 100}, true},
		{budget.Limits{PointsPerMinute: 901}, false},
		{budget.Limits{MaxInFlight: 101}, false},
		{budget.Limits{Burst: 4}, false},
		{budget.Limits{PointsPerMinute: 100, Burst: 100}, false},
		{budget.Limits{MaxWait: -1}, false},
	} {
		if err := tc.l.WithDefaults().Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v, want ok=%v", tc.l, err, tc.ok)
		}
	}
	for method, want := range map[string]int{"GET": 1, "HEAD": 1, "POST": 5, "PATCH": 5, "PUT": 5, "DELETE": 5} {
		if got := budget.Cost(method); got != want {
			t.Errorf("Cost(%s) = %d, want %d", method, got, want)
		}
	}
}
