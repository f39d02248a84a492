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
