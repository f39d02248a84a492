package replay

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/runfleet/runfleet/internal/warm"
)

// Perfect is what no forecast can beat: it is told the trace's true push
// rate for every half hour of the measured week and the true share of
// matrices of each size (drawn from the shape itself), and spends warm
// runners as the adaptive pool does — the n-th runner of a half hour is
// worth rate × share of matrices of n or more jobs, the best kept until
// aim percent of the week's jobs are served. It is a bound, not a
// strategy: it reads the future. Where it cannot meet a bar, no forecast
// can, and the shortfall is the bar's, not the forecast's.
func Perfect(s Shape, tr Trace, aim float64) Strategy {
	const slot = 30 * time.Minute
	// The shapes' matrices differ only between working hours and the rest
	// (bigMatrices): the shares are drawn once for each.
	workAtLeast, workMean := matrixShares(s, tr.Measure.Add(10*time.Hour))
	restAtLeast, restMean := matrixShares(s, tr.Measure)
	type unit struct {
		slot  int
		worth float64
	}
	var units []unit
	var jobs float64
	nslots := int(tr.End.Sub(tr.Measure) / slot)
	for i := range nslots {
		at := tr.Measure.Add(time.Duration(i) * slot)
		var rate float64
		for m := at; m.Before(at.Add(slot)); m = m.Add(time.Minute) {
			rate += s.Pushes(m, true)
		}
		rate /= slot.Minutes()
		al, mn := workAtLeast, workMean
		if !working(at) {
			al, mn = restAtLeast, restMean
		}
		jobs += rate * mn
		for _, share := range al {
			units = append(units, unit{i, rate * share})
		}
	}
	slices.SortStableFunc(units, func(a, b unit) int { return cmp.Compare(b.worth, a.worth) })
	size := make([]int, nslots)
	var served float64
	for _, u := range units {
		if served >= jobs*aim/100 {
			break
		}
		served += u.worth
		size[u.slot]++
	}
	return Strategy{Name: fmt.Sprintf("perfect forecast (aim %g)", aim), Size: func(_ *warm.History, t time.Time) int {
		if t.Before(tr.Measure) {
			return 0
		}
		return size[min(int(t.Sub(tr.Measure)/slot), nslots-1)]
	}}
}

// matrixShares draws the shape's matrices at t many times: atLeast[n-1] is
// the share of n jobs or more, mean the mean size.
func matrixShares(s Shape, t time.Time) ([]float64, float64) {
	const draws = 20000
	r := rand.New(rand.NewPCG(1, 0x5a4e))
	var counts []int
	total := 0
	for range draws {
		k := s.Matrix(r, t)
		for len(counts) < k {
			counts = append(counts, 0)
		}
		counts[k-1]++
		total += k
	}
	atLeast := make([]float64, len(counts))
	above := 0
	for n := len(counts); n >= 1; n-- {
		above += counts[n-1]
		atLeast[n-1] = float64(above) / draws
	}
	return atLeast, float64(total) / draws
}

// BestPerfect is the cheapest Perfect run that meets target at p90 on tr,
// trying aims from 90 up (a perfect forecast of rates still loses jobs to
// bursts that overlap before the runners they used are replaced); ok is
// false if none does. A higher aim keeps every runner a lower one keeps
// and more, so the first aim that meets the target is the cheapest.
func BestPerfect(s Shape, tr Trace, m Model, seed uint64, target time.Duration) (Result, bool) {
	for aim := 90.0; aim <= 99; aim++ {
		if r := Run(tr, Perfect(s, tr, aim), m, seed); r.P90 <= target {
			r.Strategy = "perfect forecast"
			return r, true
		}
	}
	return Result{}, false
}
