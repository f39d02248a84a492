// Package warm decides how many warm machines a pool keeps from what its
// job ledger says arrived before: a forecast of the coming arrivals, then a
// sizing that meets a queue-time target at a percentile of jobs with the
// fewest idle machine-minutes. Everything here is a pure function of its
// arguments (no clock, no store), so the reconciler, the Lambda reconciler
// and the trace replay all decide the same way and tests are tables.
package warm

import (
	"math"
	"sort"
	"time"
)

// Week is the period the forecast repeats on: CI follows working hours and
// weekends, so the same hour of the week is the best predictor we have.
const Week = 7 * 24 * time.Hour

// WeekStart is the Monday 00:00 UTC on or before t: where an hour of the
// week is counted from.
func WeekStart(t time.Time) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
}

// History is a pool's arrivals counted per Step from Start: Counts[i] jobs
// were queued in [Start+i·Step, Start+(i+1)·Step). Time before Start is
// unknown, not quiet: a new repository has no history and must not be
// forecast as if nothing ever came.
type History struct {
	Start  time.Time
	Step   time.Duration
	Counts []int
}

// NewHistory counts queued times into steps of step from start to end; a
// time outside [start, end) is left out (the ledger may hold jobs queued
// after the pass began).
func NewHistory(start, end time.Time, step time.Duration, queued []time.Time) History {
	n := 0
	if end.After(start) && step > 0 {
		n = int((end.Sub(start) + step - 1) / step)
	}
	h := History{Start: start, Step: step, Counts: make([]int, n)}
	for _, q := range queued {
		h.Add(q)
	}
	return h
}

// Add counts one arrival at t, if t is inside the history.
func (h *History) Add(t time.Time) {
	if i, ok := h.index(t); ok {
		h.Counts[i]++
	}
}

func (h *History) index(t time.Time) (int, bool) {
	if h.Step <= 0 || t.Before(h.Start) {
		return 0, false
	}
	i := int(t.Sub(h.Start) / h.Step)
	return i, i < len(h.Counts)
}

// Params tunes the forecast. The zero value is not usable: see Defaults.
type Params struct {
	// Weeks is how many past weeks' same hours are read.
	Weeks int
	// WeekDecay weighs the week k weeks back by WeekDecay^(k-1): last
	// week counts most, habits that changed fade.
	WeekDecay float64
	// Ahead is the span after now (at the same time of past weeks) whose
	// arrivals are forecast: long enough for a launched machine to be ready
	// before the surge that span holds.
	Ahead time.Duration
	// Recent is the span before now read as well, and RecentWeight the
	// weight of each of its steps relative to last week's: the last hours
	// say what today is like (a release day, a quiet week, a new
	// repository with no past weeks at all).
	Recent       time.Duration
	RecentWeight float64
	// Spread widens the span the burst rate is read from, by Spread
	// before and half a Spread after (rateAt): a half hour of a few weeks
	// holds too few bursts to tell its rate from chance; two hours hold
	// enough, and still tell 08:00 from 03:00.
	Spread time.Duration
}

// Defaults are the forecast's parameters when the operator set only a
// target: four weeks halving, the coming 30 minutes, the last hour.
func Defaults() Params {
	return Params{Weeks: 4, WeekDecay: 0.5, Ahead: 30 * time.Minute, Recent: time.Hour, RecentWeight: 1, Spread: time.Hour}
}

// Forecast is what the history says of the coming steps.
type Forecast struct {
	// Need is how many jobs must find a warm machine for the percentile of
	// jobs to do so: the smallest n for which the weighted share of jobs
	// that arrive within the first n of their step is at least the
	// percentile. A burst of 40 jobs in one step counts as 40 jobs wanting
	// 40 machines at once, not as an average of a few a minute.
	Need int
	// PerStep is the weighted mean of arrivals per step (what a reader
	// compares with what came); Samples how many steps were read and Jobs
	// how many jobs they held.
	PerStep float64
	Samples int
	Jobs    int
	// Level is the last hour over what the past weeks foretold for it
	// (1: as foretold); Threshold the plan's least worth of a machine
	// kept (Plan).
	Level     float64
	Threshold float64
}

// sample is one step read: its arrivals and its weight.
type sample struct {
	count  int
	weight float64
}

// Predict forecasts the steps after now from h, for the percentile
// (0 < percentile < 100) of the coming week's jobs to find a warm machine:
// it plans the week (PlanWeek) and reads the coming steps against the plan.
// Steps with no history (before h.Start, or not yet counted) are not read.
func Predict(h History, now time.Time, percentile float64, p Params) Forecast {
	return PlanWeek(h, now, percentile, p).Forecast(h, now, percentile, p)
}

// read appends the steps of h in [from, to) that began before now, each
// with weight w.
func (h History) read(samples []sample, from, to, now time.Time, w float64) []sample {
	i0, i1 := h.steps(from, to, now)
	for _, c := range h.Counts[i0:i1] {
		samples = append(samples, sample{c, w})
	}
	return samples
}

// steps is the index range [i0, i1) of the steps read from [from, to):
// one a Step from from, those that began before now and fall in h. It is
// arithmetic rather than a walk in time because the plan reads a week of
// spans every pass.
func (h History) steps(from, to, now time.Time) (int, int) {
	if h.Step <= 0 {
		return 0, 0
	}
	end := to
	if now.Before(end) {
		end = now // the future is not history
	}
	n := ceilSteps(end.Sub(from), h.Step)
	k0 := 0
	if from.Before(h.Start) {
		k0 = ceilSteps(h.Start.Sub(from), h.Step)
	}
	if n <= k0 {
		return 0, 0
	}
	i0 := int(from.Add(time.Duration(k0)*h.Step).Sub(h.Start) / h.Step)
	i1 := min(i0+n-k0, len(h.Counts))
	if i0 >= i1 {
		return 0, 0
	}
	return i0, i1
}

// ceilSteps is how many steps of step start in a span of length d (0 for
// none).
func ceilSteps(d, step time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int((d + step - 1) / step)
}

// past reads the span of length span starting at the same time as at in
// each of the past p.Weeks periods (weeks; days for a pool with no past
// week), the nearer weighing more.
func (h History) past(at time.Time, span time.Duration, now time.Time, period time.Duration, p Params) []sample {
	var samples []sample
	w := 1.0
	for k := 1; k <= p.Weeks; k++ {
		from := at.Add(-time.Duration(k) * period)
		samples = h.read(samples, from, from.Add(span), now, w)
		w *= p.WeekDecay
	}
	return samples
}

// fromSamples is the forecast's arithmetic, apart from which steps are read.
func fromSamples(samples []sample, percentile float64) Forecast {
	f := Forecast{Samples: len(samples)}
	var weight, jobs float64
	counts := make([]int, 0, len(samples))
	for _, s := range samples {
		weight += s.weight
		jobs += s.weight * float64(s.count)
		f.Jobs += s.count
		if s.count > 0 {
			counts = append(counts, s.count)
		}
	}
	if weight > 0 {
		f.PerStep = jobs / weight
	}
	if jobs == 0 {
		return f // nothing forecast: no warm machine
	}
	// Candidates for Need are the counts seen: the served share only bends
	// at one of them. The smallest that serves the percentile wins.
	sort.Ints(counts)
	want := jobs * percentile / 100
	for _, n := range uniq(counts) {
		var served float64
		for _, s := range samples {
			served += s.weight * float64(min(s.count, n))
		}
		// A tolerance for float sums: a share equal to the target meets it.
		if served >= want-1e-9*math.Max(1, want) {
			// Between the previous candidate and n the served share is
			// linear in n; the smallest whole n meeting it may lie below.
			f.Need = smallestMeeting(samples, want, n)
			return f
		}
	}
	f.Need = counts[len(counts)-1]
	return f
}

// smallestMeeting walks down from n (which meets want) to the smallest
// count that still does.
func smallestMeeting(samples []sample, want float64, n int) int {
	for n > 0 {
		var served float64
		for _, s := range samples {
			served += s.weight * float64(min(s.count, n-1))
		}
		if served < want-1e-9*math.Max(1, want) {
			break
		}
		n--
	}
	return n
}

func uniq(sorted []int) []int {
	out := sorted[:0:0]
	for i, v := range sorted {
		if i == 0 || v != sorted[i-1] {
			out = append(out, v)
		}
	}
	return out
}
