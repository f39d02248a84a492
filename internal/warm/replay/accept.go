package replay

import (
	"fmt"
	"time"
)

// Verdict is the acceptance reading of one trace: the adaptive pool
// against the cheapest static min_idle that meets the same percentile.
type Verdict struct {
	Trace    string
	Adaptive Result
	// Static is the cheapest static size meeting Target at p90, if any
	// (Met); otherwise the best static p90 at no more idle cost than the
	// adaptive pool's.
	Static Result
	Met    bool
	// Ratio is the adaptive pool's idle machine-minutes per job over the
	// static's (Met), or the static's p90 over the adaptive's (not Met).
	Ratio float64
	// OK: the adaptive pool meets Target at p90 and spends at most half the
	// static's idle per job, or (no static meets it) has a p90 at least 3×
	// lower than the best static's at equal idle cost.
	OK bool
	// Perfect is the cheapest perfect forecast meeting Target at p90
	// (BestPerfect), PerfectRatio its idle per job over Static's: the
	// least ratio any forecast could reach on this trace.
	Perfect      Result
	PerfectRatio float64
	// OutOfReach: the bar is missed, and a perfect forecast misses it too
	// (or cannot meet the target at all) — the bar asks more than the
	// trace's arrivals allow any warm pool sized by a forecast.
	OutOfReach bool
}

// WithPerfect adds the perfect forecast's reading (BestPerfect's result
// and ok) to v.
func (v Verdict) WithPerfect(p Result, ok bool) Verdict {
	v.Perfect = p
	if ok && v.Met && v.Static.IdlePerJob() > 0 {
		v.PerfectRatio = p.IdlePerJob() / v.Static.IdlePerJob()
	}
	v.OutOfReach = !v.OK && (!ok || (v.Met && v.PerfectRatio > 0.5))
	return v
}

// Judge reads one trace's results (as Run returns them, one per strategy)
// against target at p90. The adaptive strategy is the one named by
// adaptive; statics are those whose name starts "static".
func Judge(results []Result, adaptive string, target time.Duration) (Verdict, error) {
	var v Verdict
	found := false
	for _, r := range results {
		if r.Strategy == adaptive {
			v.Trace, v.Adaptive, found = r.Trace, r, true
		}
	}
	if !found {
		return v, fmt.Errorf("no result for %q", adaptive)
	}
	for _, r := range results {
		if !isStatic(r) || r.P90 > target {
			continue
		}
		if !v.Met || r.IdlePerJob() < v.Static.IdlePerJob() {
			v.Static, v.Met = r, true
		}
	}
	adaptiveMeets := v.Adaptive.P90 <= target
	if v.Met {
		v.Ratio = v.Adaptive.IdlePerJob() / v.Static.IdlePerJob()
		v.OK = adaptiveMeets && v.Ratio <= 0.5
		return v, nil
	}
	// No static size meets the target: the best static p90 among those
	// costing no more than the adaptive pool.
	for _, r := range results {
		if isStatic(r) && r.IdlePerJob() <= v.Adaptive.IdlePerJob() && (v.Static.Strategy == "" || r.P90 < v.Static.P90) {
			v.Static = r
		}
	}
	if v.Adaptive.P90 > 0 {
		v.Ratio = float64(v.Static.P90) / float64(v.Adaptive.P90)
	}
	v.OK = v.Ratio >= 3
	return v, nil
}

func isStatic(r Result) bool { return len(r.Strategy) >= 6 && r.Strategy[:6] == "static" }

// maxStatic is the largest static min_idle WithCheapestStatic tries.
const maxStatic = 64

// WithCheapestStatic returns results with the smallest static min_idle
// (0 to maxStatic) whose p90 meets target on tr added, when the sizes
// already run skip it. Strategies' sizes are a grid for reading; the bar
// is judged against every size, since a grid that skips the cheapest
// size overstates what a static pool costs (it did: 5 on the quiet week,
// 7 on release day, 36 on matrix bursts). Sizes are tried from 0 up:
// more idle runners never raise the p90 on the same draw, and cost more.
func WithCheapestStatic(results []Result, tr Trace, m Model, seed uint64, target time.Duration) []Result {
	have := map[string]Result{}
	for _, r := range results {
		if isStatic(r) {
			have[r.Strategy] = r
		}
	}
	for n := 0; n <= maxStatic; n++ {
		st := Static(n)
		r, ok := have[st.Name]
		if !ok {
			r = Run(tr, st, m, seed)
		}
		if r.P90 <= target {
			if !ok {
				results = append(results, r)
			}
			return results
		}
	}
	return results
}
