package replay

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/warm"
)

var (
	table = flag.Bool("table", false, "replay the full traces and print the table")
	svg   = flag.String("svg", "", "with -table, also write the acceptance plot (SVG) to this file")
)

func TestTable(t *testing.T) {
	if !*table {
		t.Skip("the full table: go test ./internal/warm/replay -run TestTable -table -v")
	}
	start := mondayMidnight(t)
	target := 10 * time.Second
	adaptive := Adaptive(target, 90, 60)
	fmt.Println("| trace | strategy | jobs | p50 | p90 | p99 | within 10 s | idle machine-min / job |")
	fmt.Println("|---|---|--:|--:|--:|--:|--:|--:|")
	var verdicts []Verdict
	for i, s := range Shapes(3) {
		tr := Draw(s, start, uint64(i+1))
		var results []Result
		// A fresh adaptive strategy per trace: it keeps its plan.
		for _, st := range append(Strategies(), Adaptive(target, 90, 60)) {
			res := Run(tr, st, DefaultModel(), 7)
			results = append(results, res)
			printRow(res)
		}
		perfect, ok := BestPerfect(s, tr, DefaultModel(), 7, target)
		if ok {
			printRow(perfect)
		}
		// The cheapest static size, when the grid skips it, gets its row.
		for _, res := range WithCheapestStatic(results, tr, DefaultModel(), 7, target)[len(results):] {
			results = append(results, res)
			printRow(res)
		}
		v, err := Judge(results, adaptive.Name, target)
		if err != nil {
			t.Fatal(err)
		}
		verdicts = append(verdicts, v.WithPerfect(perfect, ok))
	}
	fmt.Println()
	fmt.Println("| trace | adaptive p90 | adaptive idle min/job | cheapest static meeting p90 ≤ 10 s | its idle min/job | ratio | bar met | perfect forecast idle min/job | its ratio |")
	fmt.Println("|---|--:|--:|---|--:|--:|---|--:|--:|")
	for _, v := range verdicts {
		fmt.Printf("| %s | %.1f s | %.1f | %s | %.1f | %.2f | %v | %.1f | %.2f |\n", v.Trace, v.Adaptive.P90.Seconds(), v.Adaptive.IdlePerJob(),
			v.Static.Strategy, v.Static.IdlePerJob(), v.Ratio, v.OK, v.Perfect.IdlePerJob(), v.PerfectRatio)
	}
	// The same traces drawn again from other seeds, with one week of
	// history (as the test in make test) and three (as above): whether the
	// adaptive pool's p90 holds beyond the draws of the table.
	fmt.Println()
	fmt.Println("| trace | history | draws meeting p90 ≤ 10 s | lowest share within 10 s | ratio, lowest–highest |")
	fmt.Println("|---|--:|--:|--:|--:|")
	for i := range Shapes(1) {
		for _, weeks := range []int{1, 3} {
			s := Shapes(weeks)[i]
			met, draws, lowest, lo, hi := 0, 0, 1.0, 0.0, 0.0
			for _, seed := range sixDraws(i)[1:] {
				tr := Draw(s, start, seed)
				var results []Result
				for _, st := range append(Strategies(), Adaptive(target, 90, 60)) {
					results = append(results, Run(tr, st, DefaultModel(), 7))
				}
				results = WithCheapestStatic(results, tr, DefaultModel(), 7, target)
				v, err := Judge(results, adaptive.Name, target)
				if err != nil {
					t.Fatal(err)
				}
				draws++
				if v.Adaptive.P90 <= target {
					met++
				}
				lowest = min(lowest, v.Adaptive.Within10s)
				if draws == 1 || v.Ratio < lo {
					lo = v.Ratio
				}
				hi = max(hi, v.Ratio)
			}
			fmt.Printf("| %s | %d wk | %d of %d | %.1f%% | %.2f–%.2f |\n", s.Name, weeks, met, draws, 100*lowest, lo, hi)
		}
	}
	if *svg != "" {
		if err := os.WriteFile(*svg, []byte(Plot(verdicts)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// printRow prints one result as a row of the table.
func printRow(res Result) {
	fmt.Printf("| %s | %s | %d | %.1f s | %.1f s | %.1f s | %.1f%% | %.1f |\n", res.Trace, res.Strategy, res.Jobs,
		res.P50.Seconds(), res.P90.Seconds(), res.P99.Seconds(), 100*res.Within10s, res.IdlePerJob())
}

// sixDraws are the seeds of trace i's table draw and of the five other
// draws TestTable reads.
func sixDraws(i int) []uint64 {
	seeds := []uint64{uint64(i + 1)}
	for k := uint64(1); k <= 5; k++ {
		seeds = append(seeds, 100*k+uint64(i))
	}
	return seeds
}

// mondayMidnight is the Monday 00:00 UTC of a stopped clock's week:
// traces start on a Monday so hours of the week line up.
func mondayMidnight(t *testing.T) time.Time {
	t.Helper()
	return warm.WeekStart(testclock.At(time.Date(2026, 3, 4, 15, 0, 0, 0, time.UTC)).Now())
}
