package replay

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/warm"
)

// rateBound is the least idle machine-minutes per job that any pool sized
// from a forecast can spend on s's measured week while serving share of its
// jobs from warm runners, even a forecast told the true push rate of every
// minute and the true matrix sizes. Pushes are Poisson: their times cannot
// be foretold, only their rate. A runner idle during a minute of push rate
// r serves a job only if a push comes, and the n-th one only if that push
// fans out into n jobs or more, so the n-th runner in minute m serves at
// most r(m)·P(matrix ≥ n) jobs; keeping N(m) runners, a policy serves at most
// Σ r(m)·E[min(matrix, N(m))] (bursts that overlap before their runners are
// replaced serve fewer, never more; a pool whose size depends on what came
// does no better in expectation, by concavity). The least Σ N(m) serving
// share of the jobs is found greedily by worth (the last runner fractional).
// Booting, the idle-surplus grace and overlaps are left out: each only adds
// idle, so this is a lower bound, not a strategy.
func rateBound(s Shape, tr Trace, share float64) (idlePerJob float64) {
	work, workMean := matrixShares(s, tr.Measure.Add(10*time.Hour))
	rest, restMean := matrixShares(s, tr.Measure)
	type unit struct{ worth float64 }
	var units []unit
	var jobs float64
	for m := tr.Measure; m.Before(tr.End); m = m.Add(time.Minute) {
		r := s.Pushes(m, true)
		al, mean := work, workMean
		if !working(m) {
			al, mean = rest, restMean
		}
		jobs += r * mean
		for _, p := range al {
			units = append(units, unit{r * p})
		}
	}
	slices.SortFunc(units, func(a, b unit) int { return cmp.Compare(b.worth, a.worth) })
	want, served, minutes := jobs*share, 0.0, 0.0
	for _, u := range units {
		if served >= want || u.worth == 0 {
			break
		}
		take := min(1, (want-served)/u.worth)
		served += take * u.worth
		minutes += take
	}
	return minutes / jobs
}

// clairvoyantIdle is what a pool that knows every arrival time spends: for
// each job it serves warm (share of them), one launch timed to be ready as
// the job is queued (booting for no job: the cold boot's mean), and the
// job's own launch, booting for no job and removed once ready (the mean
// again), with no idle-surplus grace. It is the floor the bar
// would be read against if arrival times could be known.
func clairvoyantIdle(m Model, share float64) float64 {
	boot := (m.Cold.Min + m.Cold.Max) / 2
	return share * 2 * boot.Minutes()
}

// robustPerfect is the perfect forecast held to what the adaptive pool is
// held to: one aim for every draw of a trace. BestPerfect picks its aim
// after the fact, per draw, which no forecast can; here the aim is the
// lowest that meets target at p90 on the table's draw and the five other
// three-week draws of TestTable, and the ratios are its idle per job over each draw's
// cheapest static size meeting p90 (first the table's draw, then the
// lowest and highest of all six). Aims go up by half a point.
func robustPerfect(s Shape, i int, start time.Time, target time.Duration) (aim, table, lo, hi float64) {
	seeds := sixDraws(i)
	for aim = 90; aim <= 99; aim += 0.5 {
		ok := true
		table, lo, hi = 0, math.Inf(1), 0
		for j, seed := range seeds {
			tr := Draw(s, start, seed)
			p := Run(tr, Perfect(s, tr, aim), DefaultModel(), 7)
			if p.P90 > target {
				ok = false
				break
			}
			p.Strategy = "perfect"
			results := []Result{p}
			for _, st := range Strategies() {
				results = append(results, Run(tr, st, DefaultModel(), 7))
			}
			results = WithCheapestStatic(results, tr, DefaultModel(), 7, target)
			v, err := Judge(results, "perfect", target)
			if err != nil || !v.Met {
				ok = false
				break
			}
			if j == 0 {
				table = v.Ratio
			}
			lo, hi = min(lo, v.Ratio), max(hi, v.Ratio)
		}
		if ok {
			return aim, table, lo, hi
		}
	}
	return 0, 0, 0, 0
}

// busyHours says, of s's measured week in tr, which minutes are busy: the
// true push rate over twice the week's least. A schedule keeping one size
// in them and another outside is what an operator who knew the trace's
// hours exactly could write as a cron schedule with a floor.
func busyHours(s Shape, tr Trace) func(time.Time) bool {
	least := math.Inf(1)
	for m := tr.Measure; m.Before(tr.End); m = m.Add(time.Minute) {
		least = min(least, s.Pushes(m, true))
	}
	return func(t time.Time) bool { return s.Pushes(t, true) > 2*least }
}

// schedule keeps day runners in busy minutes and night runners otherwise.
func schedule(busy func(time.Time) bool, day, night int) Strategy {
	return Strategy{Name: fmt.Sprintf("busy hours %d, else %d", day, night), Size: func(_ *warm.History, t time.Time) int {
		if busy(t) {
			return day
		}
		return night
	}}
}

// bestSchedule is the cheapest busy-hours schedule, its two sizes chosen
// after the fact, that meets target at p90 on all six draws of trace i:
// its sizes, its ratio to the cheapest static size on the table's draw,
// and the highest ratio over the six. It is held, as the adaptive pool is,
// to one rule for every draw, and told what the adaptive pool must learn.
func bestSchedule(s Shape, i int, start time.Time, target time.Duration) (day, night int, table, worst float64) {
	var trs []Trace
	var busy []func(time.Time) bool
	var static []float64
	for _, seed := range sixDraws(i) {
		tr := Draw(s, start, seed)
		res := WithCheapestStatic(nil, tr, DefaultModel(), 7, target)
		trs, busy, static = append(trs, tr), append(busy, busyHours(s, tr)), append(static, res[len(res)-1].IdlePerJob())
	}
	day, night, worst = -1, -1, math.Inf(1)
	for n := 0; n <= 4; n++ {
		// More day runners never raise the p90 on the same draw: the
		// first day size meeting it on all six is the cheapest for n.
		for d := n; d <= maxStatic; d++ {
			ok, hi, tab := true, 0.0, 0.0
			for j, tr := range trs {
				r := Run(tr, schedule(busy[j], d, n), DefaultModel(), 7)
				if r.P90 > target {
					ok = false
					break
				}
				hi = max(hi, r.IdlePerJob()/static[j])
				if j == 0 {
					tab = r.IdlePerJob() / static[j]
				}
			}
			if ok {
				if hi < worst {
					day, night, table, worst = d, n, tab, hi
				}
				break
			}
		}
	}
	return day, night, table, worst
}

// TestBounds prints, with -table, the bounds beside the table's traces.
func TestBounds(t *testing.T) {
	if !*table {
		t.Skip("with -table")
	}
	start := mondayMidnight(t)
	target := 10 * time.Second
	fmt.Println("| trace | cheapest static meeting p90, idle min/job | rate-knowing bound (ratio) | clairvoyant (ratio) | perfect forecast at one aim for six draws: table draw (lowest–highest) | busy-hours schedule for six draws: table draw (highest) |")
	fmt.Println("|---|--:|--:|--:|--:|--:|")
	for i, s := range Shapes(3) {
		tr := Draw(s, start, uint64(i+1))
		var results []Result
		for _, st := range append(Strategies(), Adaptive(target, 90, 60)) {
			results = append(results, Run(tr, st, DefaultModel(), 7))
		}
		results = WithCheapestStatic(results, tr, DefaultModel(), 7, target)
		v, err := Judge(results, Adaptive(target, 90, 60).Name, target)
		if err != nil {
			t.Fatal(err)
		}
		static := v.Static.IdlePerJob()
		rb, cv := rateBound(s, tr, 0.9), clairvoyantIdle(DefaultModel(), 0.9)
		aim, tab, lo, hi := robustPerfect(s, i, start, target)
		day, night, stab, sworst := bestSchedule(s, i, start, target)
		fmt.Printf("| %s | %s %.1f | %.1f (%.2f) | %.1f (%.3f) | aim %g: %.2f (%.2f–%.2f) | %d, else %d: %.2f (%.2f) |\n", s.Name, v.Static.Strategy, static,
			rb, rb/static, cv, cv/static, aim, tab, lo, hi, day, night, stab, sworst)
	}
}
