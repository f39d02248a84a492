package engine

import (
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/warm"
)

// The decision for one pool, as a table: which kind keeps the pool warm
// follows the target and whether the provider keeps stopped machines; the
// floor and ceilings hold whatever the kind. The arrivals are a burst of
// four every minute of the last hour (a new pool: the last hour is all it
// has), so four are needed at once.
func TestDecideWarmSize(t *testing.T) {
	now := testclock.At(time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)).Now()
	var arrivals []time.Time
	for m := 1; m <= 60; m++ {
		at := now.Add(-time.Duration(m) * time.Minute)
		arrivals = append(arrivals, at, at, at, at)
	}
	cases := []struct {
		name         string
		target       time.Duration
		stoppedOK    bool
		minIdle      int
		hot, stopped int
		reason       string
	}{
		{"10 s: hot runners", 10 * time.Second, true, 0, 4, 0, warm.ReasonHot},
		{"20 s with stopped machines: stopped, cheaper", 20 * time.Second, true, 0, 0, 4, warm.ReasonStopped},
		{"20 s with stopped machines keeps min_idle hot", 20 * time.Second, true, 1, 1, 4, warm.ReasonStopped},
		{"20 s without: hot", 20 * time.Second, false, 0, 4, 0, warm.ReasonHot},
		{"2 m: a cold launch is in time", 2 * time.Minute, true, 0, 0, 0, warm.ReasonColdMeets},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pool := &runner.Pool{Name: "p", MinIdle: c.minIdle, MaxRunners: 10,
				Warm: &runner.WarmPolicy{Target: c.target, Percentile: 90, MaxIdle: 20}}
			h := warm.Kept{}.History(arrivals, now, keptRules(warm.Defaults()))
			got := decideWarmSize(pool, h, arrivals, now, warm.Defaults(), c.stoppedOK)
			if got.Hot != c.hot || got.Stopped != c.stopped || got.Reason != c.reason || got.Need != 4 || got.ArrivedLastHour != 240 {
				t.Errorf("decideWarmSize = %+v; want %d hot, %d stopped (%s), need 4, 240 arrived", got, c.hot, c.stopped, c.reason)
			}
		})
	}
}
