package warm

import (
	"testing"
	"time"
)

func TestYoungAim(t *testing.T) {
	for _, c := range []struct{ p, want float64 }{{90, 95}, {50, 75}, {99, 99.5}} {
		if got := youngAim(c.p); got != c.want {
			t.Errorf("youngAim(%g) = %g, want %g", c.p, got, c.want)
		}
	}
}

func TestPlanScale(t *testing.T) {
	for _, c := range []struct {
		period time.Duration
		level  float64
		want   float64
	}{
		{Week, 0.2, 1},  // a quiet week keeps its runners
		{Week, 3, 3},    // a release day raises them
		{Day, 0.2, 0.2}, // a young pool's quiet day is believed
		{Day, 2, 2},
	} {
		if got := (Plan{Period: c.period}).scale(c.level); got != c.want {
			t.Errorf("scale(%v, %g) = %g, want %g", c.period, c.level, got, c.want)
		}
	}
}

// A pool with a few hours of history (no plan yet) aims at youngAim: with
// bursts of 1 and 2 jobs alternating, two thirds of the jobs arrive within
// the first runner of their minute: enough for p60 itself, short of its
// young aim of 80, so it keeps two.
func TestYoungPoolAimsHigher(t *testing.T) {
	now := WeekStart(time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)).Add(10 * time.Hour)
	h := NewHistory(now.Add(-time.Hour), now, time.Minute, nil)
	for i := range 60 {
		h.Counts[i] = 1 + i%2
	}
	if got := Predict(h, now, 60, Defaults()).Need; got != 2 {
		t.Errorf("need at p60 (aim 80) = %d, want 2", got)
	}
}

// A young pool with two days behind it sets its plan's threshold on the
// day just past as the days before it foretold it: how busy the last day
// was does not move it (the burst sizes, read from every burst, are the
// same here: single jobs). With one day behind it, the plan reads the
// coming day, foretold by the last, and a busier last day moves it.
func TestYoungPlanReadsTheDayJustPast(t *testing.T) {
	start := WeekStart(time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC))
	history := func(days int, lastEvery int) History {
		now := start.Add(time.Duration(days) * Day)
		h := NewHistory(start, now, time.Minute, nil)
		for i := range h.Counts {
			every := 10
			if i >= len(h.Counts)-int(Day/time.Minute) {
				every = lastEvery
			}
			// Busy 08:00–18:00, a job a minute in every'th minute.
			if m := i % (24 * 60); m >= 8*60 && m < 18*60 && i%every == 0 {
				h.Counts[i] = 1
			}
		}
		return h
	}
	for _, c := range []struct {
		days  int
		moves bool
	}{{days: 3, moves: false}, {days: 1, moves: true}} {
		quiet, busy := history(c.days, 10), history(c.days, 2)
		now := start.Add(time.Duration(c.days) * Day)
		a := PlanWeek(quiet, now, 90, Defaults())
		b := PlanWeek(busy, now, 90, Defaults())
		if a.Period != Day || b.Period != Day || !a.OK || !b.OK {
			t.Fatalf("%d days: want plans by the day, got %+v and %+v", c.days, a, b)
		}
		if moved := a.Threshold != b.Threshold; moved != c.moves {
			t.Errorf("%d days: threshold %g (last day quiet) vs %g (last day busy), moved %v, want %v", c.days, a.Threshold, b.Threshold, moved, c.moves)
		}
	}
}
