package replay

import (
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/testclock"
)

var table = flag.Bool("table", false, "replay the full traces and print the table")

func TestTable(t *testing.T) {
	if !*table {
		t.Skip("the full table: go test ./internal/warm/replay -run TestTable -table -v")
	}
	start := mondayMidnight(t)
	for i, s := range Shapes(3) {
		tr := Draw(s, start, uint64(i+1))
		for _, st := range Strategies() {
			res := Run(tr, st, DefaultModel(), 7)
			fmt.Printf("| %s | %s | %d | %s | %s | %s | %.2f |\n", res.Trace, res.Strategy, res.Jobs, res.P50, res.P90, res.P99, res.IdlePerJob())
		}
	}
}

// mondayMidnight is a Monday 00:00 UTC from a stopped clock: traces start
// on a Monday so hours of the week line up.
func mondayMidnight(t *testing.T) time.Time {
	t.Helper()
	now := testclock.At(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)).Now()
	if now.Weekday() != time.Monday || now.Hour() != 0 {
		t.Fatalf("the clock is at %s, not a Monday 00:00", now)
	}
	return now
}
