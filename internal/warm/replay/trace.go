// Package replay plays arrival traces shaped like real CI against warm pool
// strategies on a virtual clock — no warm pool, static min_idle sizes, a
// cron schedule like Terraform's runner module, and the adaptive pool of
// package warm — and reports queue time percentiles and idle
// machine-minutes per job for each, side by side. Nothing here sleeps or
// reads the real clock: a week of a busy pool replays in milliseconds.
package replay

import (
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

// Trace is one pool's arrivals: Arrivals are queued times, sorted. Jobs
// queued at or after Measure are the ones reported; what came before is
// the history the adaptive pool learns from (and warms every strategy up).
// Known is when the pool's ledger begins: a new repository's is Measure.
type Trace struct {
	Name     string
	Known    time.Time
	Measure  time.Time
	End      time.Time
	Arrivals []time.Time
}

// Shape describes how a trace is drawn: Pushes is the mean number of
// pushes a minute at t (measured: t is in the measured week), each fanning out into Matrix(r) jobs queued within
// a second or two of each other.
type Shape struct {
	Name   string
	Weeks  int // of history before the measured week
	New    bool
	Pushes func(t time.Time, measured bool) float64
	Matrix func(r *rand.Rand, t time.Time) int
}

// Draw makes a trace of s starting at start (a Monday 00:00): Weeks weeks
// of history and one measured week, from seed.
func Draw(s Shape, start time.Time, seed uint64) Trace {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	tr := Trace{Name: s.Name, Known: start, Measure: start.Add(time.Duration(s.Weeks) * week), End: start.Add(time.Duration(s.Weeks+1) * week)}
	from := start
	if s.New {
		// A new repository: nothing before its first measured day.
		from, tr.Known = tr.Measure, tr.Measure
	}
	for m := from; m.Before(tr.End); m = m.Add(time.Minute) {
		for range poisson(r, s.Pushes(m, !m.Before(tr.Measure))) {
			at := m.Add(time.Duration(r.Int64N(int64(time.Minute))))
			for j := range s.Matrix(r, m) {
				// A matrix's jobs are queued together; GitHub spreads
				// them over a second or two.
				tr.Arrivals = append(tr.Arrivals, at.Add(time.Duration(j)*50*time.Millisecond))
			}
		}
	}
	sort.Slice(tr.Arrivals, func(i, j int) bool { return tr.Arrivals[i].Before(tr.Arrivals[j]) })
	return tr
}

const week = 7 * 24 * time.Hour

// poisson draws a Poisson count of mean lambda (Knuth's; lambda is small).
func poisson(r *rand.Rand, lambda float64) int {
	if lambda <= 0 {
		return 0
	}
	l, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= r.Float64()
		if p <= l {
			return k
		}
		k++
	}
}

// office is the rate of a team working weekdays 08–18 UTC, busiest late
// morning, with a trickle of scheduled jobs at night and at weekends.
func office(peak, trickle float64) func(time.Time, bool) float64 {
	return func(t time.Time, _ bool) float64 {
		if !working(t) {
			return trickle
		}
		h := float64(t.Hour()) + float64(t.Minute())/60
		// A bell over the working day: 10:00–12:00 and 14:00–16:00 busiest.
		return trickle + peak*(0.6+0.4*math.Sin(math.Pi*(h-8)/5)*math.Sin(math.Pi*(h-8)/5))
	}
}

// smallMatrices: most pushes make one job, some a few, rarely ten.
func smallMatrices(r *rand.Rand, _ time.Time) int {
	switch x := r.Float64(); {
	case x < 0.6:
		return 1
	case x < 0.9:
		return 2 + r.IntN(3)
	default:
		return 5 + r.IntN(6)
	}
}

// bigMatrices: a fifth of the working day's pushes fan out into 40 jobs
// at once; nights and weekends hold scheduled jobs, one at a time.
func bigMatrices(r *rand.Rand, t time.Time) int {
	if !working(t) {
		return 1
	}
	if r.Float64() < 0.2 {
		return 40
	}
	return smallMatrices(r, t)
}

// working says whether t is in a weekday's 08:00–18:00 UTC.
func working(t time.Time) bool {
	return t.Weekday() != time.Saturday && t.Weekday() != time.Sunday && t.Hour() >= 8 && t.Hour() < 18
}

// Shapes are the traces of the report: weekday/weekend and day/night,
// round the clock, matrix bursts, a release day, a quiet week, a new
// repository. weeks is the history each gets (the short test uses fewer).
func Shapes(weeks int) []Shape {
	base := office(0.25, 0.01)
	return []Shape{
		{Name: "weekday office", Weeks: weeks, Pushes: base, Matrix: smallMatrices},
		{Name: "day and night", Weeks: weeks, Matrix: smallMatrices, Pushes: func(t time.Time, _ bool) float64 {
			// An open-source project: contributors in several time zones
			// every day of the week, busiest 06:00–22:00 UTC, a trough at
			// night.
			if h := t.Hour(); h < 6 || h >= 22 {
				return 0.01
			}
			return 0.02 + 0.2*math.Sin(math.Pi*float64(t.Hour()-6)/16)
		}},
		{Name: "matrix bursts", Weeks: weeks, Pushes: office(0.05, 0.002), Matrix: bigMatrices},
		{Name: "release day", Weeks: weeks, Matrix: smallMatrices, Pushes: func(t time.Time, measured bool) float64 {
			// The measured week's Wednesday afternoon: four times the usual,
			// which no past week foretold.
			if measured && t.Weekday() == time.Wednesday && t.Hour() >= 12 && t.Hour() < 18 {
				return 4 * base(t, measured)
			}
			return base(t, measured)
		}},
		{Name: "quiet week", Weeks: weeks, Matrix: smallMatrices, Pushes: func(t time.Time, measured bool) float64 {
			// A holiday week after busy ones: the past over-forecasts.
			if measured {
				return 0.15 * base(t, measured)
			}
			return base(t, measured)
		}},
		{Name: "new repository", Weeks: weeks, New: true, Pushes: base, Matrix: smallMatrices},
	}
}
