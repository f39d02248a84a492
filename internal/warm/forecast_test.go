package warm

import (
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/testclock"
)

// monday10 is a Monday 10:00 UTC from a stopped clock: the tests place
// arrivals relative to it, so a moved clock (RUNFLEET_TEST_CLOCK_SHIFT)
// keeps every expectation.
func monday10(t *testing.T) time.Time {
	t.Helper()
	now := testclock.At(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)).Now()
	if now.Weekday() != time.Monday || now.Hour() != 10 {
		t.Fatalf("the clock is at %s, not a Monday 10:00", now)
	}
	return now
}

func TestPredict(t *testing.T) {
	now := monday10(t)
	p := Params{Weeks: 2, WeekDecay: 0.5, Ahead: 5 * time.Minute, Recent: 5 * time.Minute, RecentWeight: 1}
	// at places n arrivals at an offset from now.
	type arrivals map[time.Duration]int
	cases := []struct {
		name       string
		start      time.Duration // the history's start, relative to now
		at         arrivals
		percentile float64
		want       int
		wantJobs   int
	}{
		{"no history at all", 0, nil, 90, 0, 0},
		{"quiet weeks: scale to zero", -3 * Week, nil, 90, 0, 0},
		{"one job a minute last week's coming minutes", -3 * Week, arrivals{
			-Week: 1, -Week + time.Minute: 1, -Week + 2*time.Minute: 1, -Week + 3*time.Minute: 1, -Week + 4*time.Minute: 1,
		}, 90, 1, 5},
		{"a matrix of 40 in one second is a burst of 40, not 8 a minute", -3 * Week, arrivals{
			-Week + time.Second: 40,
		}, 90, 36, 40},
		{"the percentile is of jobs: 40-job bursts among single jobs", -3 * Week, arrivals{
			-Week: 40, -Week + time.Minute: 1, -Week + 2*time.Minute: 1,
		}, 50, 19, 42},
		{"after the window: the hour after is not read", -3 * Week, arrivals{
			-Week + 10*time.Minute: 30,
		}, 90, 0, 0},
		{"the last minutes count when weeks are quiet (release day)", -3 * Week, arrivals{
			-time.Minute: 10, -2 * time.Minute: 10,
		}, 90, 9, 20},
		{"a new repository: only the last minutes, no quiet weeks diluting them", -10 * time.Minute, arrivals{
			-time.Minute: 4,
		}, 90, 4, 4},
		{"the future is never read", -3 * Week, arrivals{
			time.Minute: 50,
		}, 90, 0, 0},
		// Weighted, 2 + 10/2 = 7 jobs: half is 3.5, which 2 + 3/2 meets.
		{"two weeks back weighs half of last week", -3 * Week, arrivals{
			-Week: 2, -2 * Week: 10,
		}, 50, 3, 12},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var queued []time.Time
			for off, n := range c.at {
				for range n {
					queued = append(queued, now.Add(off))
				}
			}
			h := NewHistory(now.Add(c.start), now.Add(time.Hour), time.Minute, queued)
			f := Predict(h, now, c.percentile, p)
			if f.Need != c.want || f.Jobs != c.wantJobs {
				t.Errorf("Need %d from %d jobs, want %d from %d (%+v)", f.Need, f.Jobs, c.want, c.wantJobs, f)
			}
		})
	}
}

func TestFromSamples(t *testing.T) {
	cases := []struct {
		name       string
		samples    []sample
		percentile float64
		want       int
		perStep    float64
	}{
		{"empty", nil, 90, 0, 0},
		{"all zero", []sample{{0, 1}, {0, 1}}, 90, 0, 0},
		{"steady 3", []sample{{3, 1}, {3, 1}}, 90, 3, 3},
		// 10 jobs: 9 of them arrive alone; 90% are served by one machine.
		{"ninety percent alone", []sample{{1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, 90, 1, 1},
		// 5 jobs in one step, 5 alone: serving 90% needs 4 of the burst.
		{"burst among singles", []sample{{5, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}}, 90, 4, 10.0 / 6},
		// A weight of zero reads nothing.
		{"zero weight", []sample{{9, 0}, {1, 1}}, 90, 1, 1},
		{"p99 of a burst", []sample{{100, 1}}, 99, 99, 100},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := fromSamples(c.samples, c.percentile)
			if f.Need != c.want || f.PerStep != c.perStep {
				t.Errorf("got Need %d PerStep %v, want %d %v", f.Need, f.PerStep, c.want, c.perStep)
			}
		})
	}
}

func TestSize(t *testing.T) {
	withStopped, hotOnly := DefaultKinds(true), DefaultKinds(false)
	cases := []struct {
		name   string
		need   int
		target time.Duration
		kinds  Kinds
		limits Limits
		want   Decision
	}{
		{"nothing forecast: zero", 0, 10 * time.Second, hotOnly, Limits{}, Decision{0, 0, ReasonNothingForecast}},
		{"nothing forecast keeps the floors", 0, 10 * time.Second, withStopped, Limits{MinIdle: 1, StoppedFloor: 2}, Decision{1, 2, ReasonNothingForecast}},
		{"10 s: only hot runners make it", 5, 10 * time.Second, withStopped, Limits{}, Decision{5, 0, ReasonHot}},
		{"20 s: stopped machines are cheaper", 5, 20 * time.Second, withStopped, Limits{}, Decision{0, 5, ReasonStopped}},
		{"20 s without a stopped pool: hot", 5, 20 * time.Second, hotOnly, Limits{}, Decision{5, 0, ReasonHot}},
		{"90 s: a cold launch is in time", 5, 90 * time.Second, withStopped, Limits{MinIdle: 1}, Decision{1, 0, ReasonColdMeets}},
		{"3 s: nothing meets it; hot comes closest", 5, 3 * time.Second, withStopped, Limits{}, Decision{5, 0, ReasonHotBestEffort}},
		{"max_idle caps the forecast", 40, 10 * time.Second, hotOnly, Limits{MaxIdle: 20}, Decision{20, 0, ReasonHot}},
		{"max_runners caps hot runners", 40, 10 * time.Second, hotOnly, Limits{MaxIdle: 20, MaxRunners: 8}, Decision{8, 0, ReasonHot}},
		{"max_runners does not cap stopped machines", 40, 20 * time.Second, withStopped, Limits{MaxIdle: 20, MaxRunners: 8}, Decision{0, 20, ReasonStopped}},
		{"the floor wins over a smaller forecast", 2, 10 * time.Second, hotOnly, Limits{MinIdle: 3}, Decision{3, 0, ReasonHot}},
		{"the floor beside stopped machines", 4, 20 * time.Second, withStopped, Limits{MinIdle: 1, StoppedFloor: 2}, Decision{1, 4, ReasonStopped}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Size(c.need, c.target, c.kinds, c.limits); got != c.want {
				t.Errorf("Size(%d, %s) = %+v, want %+v", c.need, c.target, got, c.want)
			}
		})
	}
}
