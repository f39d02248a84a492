package warm

import (
	"cmp"
	"slices"
	"time"
)

// Arrivals come in bursts: a push fans out into a matrix whose jobs are
// queued within a second or two. The forecast reads a step with arrivals
// as one burst, and models the coming steps as bursts at a rate that
// follows the hour of the week, of sizes drawn from the pool's own
// history. The rate is read from the same half hour of past weeks (a
// hundred steps or so: enough to tell a busy hour from a quiet one); the
// sizes from every burst the history holds (too few big matrices fall in
// any one half hour to tell when the next comes, but enough in a week to
// say how big they come).

// bursts is what the history says of burst sizes: worth[n-1] is the share
// of bursts of n or more jobs, which is the share of bursts in which an
// n-th warm machine serves a job.
type bursts struct {
	atLeast []float64
	mean    float64
}

// burstSizes reads every burst in h before now, the recent weighing more
// (by p.WeekDecay a week, as the weeks themselves).
func (h History) burstSizes(now time.Time, p Params) bursts {
	// A weighted histogram of the counts, summed in place: the history is
	// weeks of steps, read every time the week is planned.
	var byCount []float64
	var weight, jobs float64
	for k := 0; k <= p.Weeks; k++ {
		to := now.Add(-time.Duration(k) * Week)
		w := 1.0
		for range k {
			w *= p.WeekDecay
		}
		i0, i1 := h.steps(to.Add(-Week), to, now)
		for _, c := range h.Counts[i0:i1] {
			if c == 0 {
				continue
			}
			for len(byCount) <= c {
				byCount = append(byCount, 0)
			}
			byCount[c] += w
			weight += w
			jobs += w * float64(c)
		}
	}
	if weight == 0 {
		return bursts{}
	}
	// atLeast[n-1]: the weighted share of bursts of n or more.
	b := bursts{atLeast: make([]float64, len(byCount)-1), mean: jobs / weight}
	var above float64
	for c := len(byCount) - 1; c >= 1; c-- {
		above += byCount[c]
		b.atLeast[c-1] = above / weight
	}
	return b
}

// stepSum is what a span of steps adds up to, read without keeping the
// steps: Forecast reads it every pass.
type stepSum struct {
	weight, jobs, bursts float64 // weighted
	steps, count         int     // unweighted
}

func (a *stepSum) add(h History, from, to, now time.Time, w float64) {
	i0, i1 := h.steps(from, to, now)
	for _, c := range h.Counts[i0:i1] {
		a.weight += w
		a.jobs += w * float64(c)
		a.steps++
		a.count += c
		if c > 0 {
			a.bursts += w
		}
	}
}

// pastSum is past's spans, summed.
func (h History) pastSum(at time.Time, span time.Duration, now time.Time, period time.Duration, p Params) stepSum {
	var a stepSum
	w := 1.0
	for k := 1; k <= p.Weeks; k++ {
		from := at.Add(-time.Duration(k) * period)
		a.add(h, from, from.Add(span), now, w)
		w *= p.WeekDecay
	}
	return a
}

func (a stepSum) rate() float64 {
	if a.weight == 0 {
		return 0
	}
	return a.bursts / a.weight
}

// rateAt is the burst rate foretold for the half hour from at: the past
// weeks' around it (Spread).
func (h History) rateAt(at, now time.Time, period time.Duration, p Params) float64 {
	// The same sum as rate(h.past(…)), without the samples: the plan reads
	// this for every half hour of the week.
	var steps, bursts float64
	w := 1.0
	for k := 1; k <= p.Weeks; k++ {
		from := at.Add(-p.Spread - time.Duration(k)*period)
		i0, i1 := h.steps(from, from.Add(p.Ahead+2*p.Spread), now)
		steps += w * float64(i1-i0)
		for _, c := range h.Counts[i0:i1] {
			if c > 0 {
				bursts += w
			}
		}
		w *= p.WeekDecay
	}
	if steps == 0 {
		return 0
	}
	return bursts / steps
}

// Plan spends warm machines where they serve the most jobs. A percentile
// of jobs is a target over the week, not over every half hour: a trickle
// of night jobs is best left to cold launches while the same machines
// would serve dozens of jobs by day. The n-th warm machine kept during a
// step serves a job when a burst of n or more arrives in it, so its worth
// is rate × share of bursts of n or more (jobs a machine-step). PlanWeek
// ranks every (half hour of the coming week, n) by worth and keeps the
// best until the percentile of the week's jobs is served: Threshold is the
// worth of the last one kept. Forecast keeps, now, every machine worth as
// much.
type Plan struct {
	// Threshold is the least worth (jobs a machine-step) of a warm machine
	// kept; Jobs the week's jobs the past weeks foretell.
	Threshold float64
	Jobs      float64
	// OK is false when no past week holds a job: a new repository, whose
	// forecast falls back to its last hour (Forecast).
	OK     bool
	bursts bursts
	// Period is what the plan repeats on: a week, or a day for a pool
	// with less than a week of history (a new repository's second day is
	// foretold by its first).
	Period time.Duration
}

// PlanWeek plans the week after now from the weeks of h before it, or the
// day after now from the days before it when h holds less than a week or
// no past week holds a job.
func PlanWeek(h History, now time.Time, percentile float64, p Params) Plan {
	if !h.Start.After(now.Add(-Week)) {
		if pl := plan(h, now, percentile, p, Week); pl.OK {
			return pl
		}
	}
	return plan(h, now, youngAim(percentile), p, Day)
}

// youngAim is the percentile a pool with less than a week of history
// plans for: half way from the one it is asked for (AimPercentile's) to
// 100. A plan by the day reads
// one to six past days, so its rates and burst sizes are rougher than a
// week's, and the jobs a rough plan misses are missed at the target's
// expense; aiming higher pays for the roughness in idle runners until the
// pool has a week behind it. The replay's new repository missed p90
// without it (87.7 % of jobs within 10 s) and meets it with it
// (docs/benchmarks.md#warm-pools).
func youngAim(percentile float64) float64 {
	return percentile + (100-percentile)/2
}

// Day is the period of a pool with less than a week of history.
const Day = 24 * time.Hour

func plan(h History, now time.Time, percentile float64, p Params, period time.Duration) Plan {
	pl := Plan{bursts: h.burstSizes(now, p), Period: period}
	if h.Step <= 0 || p.Ahead <= 0 || len(pl.bursts.atLeast) == 0 {
		return pl
	}
	type unit struct{ worth, jobs float64 }
	var units []unit
	steps := float64(p.Ahead / h.Step)
	for at := now; at.Before(now.Add(period)); at = at.Add(p.Ahead) {
		r := h.rateAt(at, now, period, p)
		if r == 0 {
			continue
		}
		for _, s := range pl.bursts.atLeast {
			units = append(units, unit{r * s, r * s * steps})
			pl.Jobs += r * s * steps
		}
	}
	if pl.Jobs == 0 {
		return pl
	}
	slices.SortFunc(units, func(a, b unit) int { return cmp.Compare(b.worth, a.worth) })
	want, served := pl.Jobs*percentile/100, 0.0
	pl.OK = true
	for _, u := range units {
		served += u.jobs
		pl.Threshold = u.worth
		if served >= want*(1-1e-9) {
			break
		}
	}
	return pl
}

// Forecast is the plan read now. The coming steps' burst rate is the same
// half hour's in the past weeks, scaled by Level: how the last hour
// compares with what those weeks foretold for it (a release day runs
// above it, a quiet week below). Every machine whose worth reaches the
// plan's Threshold is kept. Without a past week (a new repository) the
// last hour alone is read, and Need is what serves the percentile of its
// jobs.
func (pl Plan) Forecast(h History, now time.Time, percentile float64, p Params) Forecast {
	week := h.pastSum(now, p.Ahead, now, pl.Period, p)
	if !pl.OK || week.steps == 0 {
		samples := h.past(now, p.Ahead, now, pl.Period, p)
		f := fromSamples(h.read(samples, now.Add(-p.Recent), now, now, p.RecentWeight), youngAim(percentile))
		f.Level = 1
		return f
	}
	var last stepSum
	last.add(h, now.Add(-p.Recent), now, now, p.RecentWeight)
	f := Forecast{Samples: week.steps, Jobs: week.count, Threshold: pl.Threshold}
	f.Level = level(last, h.pastSum(now.Add(-p.Recent), p.Recent, now, pl.Period, p))
	f.PerStep = week.jobs / week.weight * f.Level
	r := h.rateAt(now, now, pl.Period, p) * pl.scale(f.Level)
	for _, s := range pl.bursts.atLeast {
		if r*s < pl.Threshold {
			break
		}
		f.Need++
	}
	return f
}

// scale is what the level does to the foretold rate. Above 1 it raises it
// (a release day). Below 1 it lowers it only in a plan by the day: a pool
// younger than a week has never seen a weekend, so its Saturday is foretold
// by its Friday, and a Saturday morning far quieter than foretold is the
// only sign it has that this day is not a working one. A plan by the week
// has seen the weekend; there a quiet level is a quiet week, whose fewer
// jobs need the same runners for the same percentile.
func (pl Plan) scale(level float64) float64 {
	if pl.Period == Day {
		return level
	}
	return max(level, 1)
}

// Level bounds: a last hour ten times quieter or five times busier than
// foretold is believed no further, since an hour is few bursts.
const (
	minLevel = 0.1
	maxLevel = 5
	// levelPrior is the bursts added to both sides of the level's ratio:
	// an hour of three bursts where two were foretold is chance, not a
	// release day; ten where two were foretold is not.
	levelPrior = 3
)

// level is the last hour's bursts over what the past weeks foretold for
// it. Bursts, not jobs: one 40-job matrix more or less is not a busier or
// quieter day.
func level(last, foretold stepSum) float64 {
	n := float64(last.steps)
	got, want := last.rate()*n, foretold.rate()*n
	return min(max((got+levelPrior)/(want+levelPrior), minLevel), maxLevel)
}
