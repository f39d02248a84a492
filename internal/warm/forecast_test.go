package warm

import (
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/testclock"
)

// monday10 is a Monday 10:00 UTC in the week of a stopped clock: the
// tests place arrivals relative to it, so a moved clock
// (RUNFLEET_TEST_CLOCK_SHIFT) keeps every expectation.
func monday10(t *testing.T) time.Time {
	t.Helper()
	return WeekStart(testclock.At(time.Date(2026, 3, 4, 15, 0, 0, 0, time.UTC)).Now()).Add(10 * time.Hour)
}

func TestWeekStart(t *testing.T) {
	monday := monday10(t).Add(-10 * time.Hour)
	if monday.Weekday() != time.Monday || monday.Hour() != 0 || monday.Minute() != 0 {
		t.Fatalf("WeekStart gave %s", monday)
	}
	for d := range 7 {
		for _, h := range []time.Duration{0, 23*time.Hour + 59*time.Minute} {
			at := monday.AddDate(0, 0, d).Add(h)
			if got := WeekStart(at); !got.Equal(monday) {
				t.Errorf("WeekStart(%s) = %s, want %s", at, got, monday)
			}
		}
	}
}

func TestPredict(t *testing.T) {
	now := monday10(t)
	p := Params{Weeks: 2, WeekDecay: 0.5, Ahead: 5 * time.Minute, Recent: 5 * time.Minute, RecentWeight: 1}
	// at places n arrivals at an offset from now.
	type arrivals map[time.Duration]int
	// singles places one arrival a minute for n minutes from off.
	singles := func(a arrivals, off time.Duration, n int) arrivals {
		for i := range n {
			a[off+time.Duration(i)*time.Minute] = 1
		}
		return a
	}
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
		{"one job a minute last week's coming minutes", -3 * Week, singles(arrivals{}, -Week, 5), 90, 1, 5},
		{"a matrix of 40 in one second is a burst of 40, not 8 a minute", -3 * Week, arrivals{
			-Week + time.Second: 40,
		}, 90, 40, 40},
		{"a burst later in the week is planned for then, not now", -3 * Week, arrivals{
			-Week + time.Hour: 40,
		}, 90, 0, 0},
		// 5 jobs at this time last week, one at night: 5 of 6 jobs is
		// more than 75%, so the night job is left to a cold launch, and
		// this hour keeps one machine (the next case reads the night).
		{"the percentile is of the week's jobs: a night job is left cold", -3 * Week, singles(arrivals{-Week + 15*time.Hour: 1}, -Week, 5), 75, 1, 5},
		{"night: the same week, read at the night job's hour", -3*Week - 15*time.Hour, singles(arrivals{-Week: 1}, -Week-15*time.Hour, 20), 90, 0, 1},
		{"a new repository: only the last minutes", -10 * time.Minute, arrivals{
			-time.Minute: 4,
		}, 90, 4, 4},
		{"the future is never read", -3 * Week, arrivals{
			time.Minute: 50,
		}, 90, 0, 0},
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

func TestLevel(t *testing.T) {
	// steps sums of steps of weight 1, bursts of them with one job.
	steps := func(bursts, of int) stepSum {
		return stepSum{weight: float64(of), jobs: float64(bursts), bursts: float64(bursts), steps: of, count: bursts}
	}
	cases := []struct {
		name           string
		last, foretold stepSum
		want           float64
	}{
		{"as foretold", steps(6, 60), steps(6, 60), 1},
		{"quiet as foretold: 1, not 0/0", steps(0, 60), steps(0, 60), 1},
		{"one burst more is chance", steps(3, 60), steps(2, 60), 1.2},
		{"a release day: four times the bursts", steps(24, 60), steps(6, 60), 3},
		{"a quiet week", steps(0, 60), steps(27, 60), 0.1},
		{"at most five times", steps(60, 60), steps(1, 60), 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := level(c.last, c.foretold); got != c.want {
				t.Errorf("level = %v, want %v", got, c.want)
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
