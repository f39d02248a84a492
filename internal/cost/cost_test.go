package cost_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/cost"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/providers"
)

// countingReader is a provider's price reader that counts its reads.
type countingReader struct {
	usd   float64
	err   error
	reads int
}

func (r *countingReader) HourlyPriceUSD(context.Context, string, string) (float64, error) {
	r.reads++
	return r.usd, r.err
}

func TestPricesLookInTheTableFirst(t *testing.T) {
	reader := &countingReader{usd: 9}
	p := cost.NewPrices(cost.Table{
		Pools:    map[string]float64{"gpu": 2.5},
		Machines: map[string]float64{cost.MachineKey("M7G.large", ""): 0.0816, cost.MachineKey("m7g.large", runner.MarketSpot): 0.03},
	}, map[string]providers.PriceReader{"gpu": reader, "linux": reader}, 0, nil)
	for _, tc := range []struct {
		pool, machineType, market string
		want                      float64
	}{
		{"gpu", "p5.48xlarge", runner.MarketSpot, 2.5},        // the pool's flat price wins
		{"linux", "m7g.large", runner.MarketOnDemand, 0.0816}, // type and market, case-insensitive
		{"linux", "m7g.large", "", 0.0816},                    // no market is on-demand
		{"linux", "m7g.large", runner.MarketSpot, 0.03},       // the spot row
		{"linux", "c7g.large", runner.MarketSpot, 9},          // not in the table: the provider
		{"external", "", "", 0},                               // checked below: an error
	} {
		got, err := p.HourlyPriceUSD(context.Background(), tc.pool, tc.machineType, tc.market)
		if tc.pool == "external" {
			if err == nil || !strings.Contains(err.Error(), "pools[].cost.usd_per_hour") {
				t.Fatalf("unpriced pool: %v, %v; want an error naming the config key", got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Fatalf("%s %s %s = %v, %v; want %v", tc.pool, tc.machineType, tc.market, got, err, tc.want)
		}
	}
	if reader.reads != 1 {
		t.Fatalf("provider reads = %d, want 1 (only the type the table lacks)", reader.reads)
	}
}

func TestPricesCacheWhatTheProviderSaid(t *testing.T) {
	clock := testclock.At(time.Date(2026, time.November, 28, 9, 0, 0, 0, time.UTC))
	reader := &countingReader{usd: 0.04}
	p := cost.NewPrices(cost.Table{}, map[string]providers.PriceReader{"linux": reader}, time.Hour, clock.Now)
	ask := func() (float64, error) {
		return p.HourlyPriceUSD(context.Background(), "linux", "m7g.large", runner.MarketSpot)
	}
	for range 3 {
		if usd, err := ask(); usd != 0.04 || err != nil {
			t.Fatalf("price = %v, %v", usd, err)
		}
	}
	if reader.reads != 1 {
		t.Fatalf("reads within the TTL = %d, want 1", reader.reads)
	}
	clock.Advance(time.Hour)
	reader.usd = 0.05
	if usd, _ := ask(); usd != 0.05 || reader.reads != 2 {
		t.Fatalf("after the TTL: price %v after %d reads, want 0.05 read again", usd, reader.reads)
	}

	// A failure is remembered for minutes, not hours.
	reader.err = errors.New("throttled")
	clock.Advance(time.Hour)
	if _, err := ask(); err == nil {
		t.Fatal("a failed read came back as a price")
	}
	if _, err := ask(); err == nil || reader.reads != 3 {
		t.Fatalf("a failure within 5 minutes is not read again: reads %d", reader.reads)
	}
	reader.err = nil
	clock.Advance(5 * time.Minute)
	if usd, err := ask(); err != nil || usd != 0.05 || reader.reads != 4 {
		t.Fatalf("after 5 minutes: %v, %v after %d reads", usd, err, reader.reads)
	}
}

func deleted(pool, repo string, at time.Time, c *runner.Cost) *runner.Instance {
	return &runner.Instance{Name: pool + repo + at.String(), Pool: pool, Repository: repo, Status: runner.StatusDeleted, StatusChangedAt: at, Cost: c}
}

// ofJob sets the job inst was made for and, when ran != 0, the job its
// runner ran.
func ofJob(inst *runner.Instance, madeFor, ran int64) *runner.Instance {
	inst.JobID, inst.RunAttempt = madeFor, 1
	if ran != 0 {
		inst.ActiveJobID, inst.ActiveRunAttempt = ran, 1
	}
	return inst
}

func TestSummarize(t *testing.T) {
	day1 := time.Date(2026, time.November, 27, 23, 30, 0, 0, time.FixedZone("UTC-1", -3600)) // the 28th in UTC
	day2 := time.Date(2026, time.November, 29, 1, 0, 0, 0, time.UTC)
	sum := cost.Summarize([]*runner.Instance{
		ofJob(deleted("linux", "octo/a", day1, &runner.Cost{USD: 0.1, Seconds: 100}), 7, 0),
		ofJob(deleted("linux", "octo/b", day2, &runner.Cost{USD: 0.2, Seconds: 200}), 8, 7), // made for 8, ran 7
		ofJob(deleted("gpu", "octo/a", day2, &runner.Cost{USD: 1.5, Seconds: 300}), 9, 9),
		deleted("gpu", "", day2, &runner.Cost{Seconds: 50, Unknown: "no price"}),
		{Name: "live", Pool: "linux", Status: runner.StatusRunning}, // no cost yet
	})
	row := func(key string, usd float64, secs int64, n, unknown int) cost.Row {
		return cost.Row{Key: key, USD: usd, Seconds: secs, Instances: n, Unknown: unknown}
	}
	want := cost.Summary{
		Pools:        []cost.Row{row("gpu", 1.5, 350, 1, 1), row("linux", 0.3, 300, 2, 0)},
		Repositories: []cost.Row{row("octo/a", 1.6, 400, 2, 0), row("octo/b", 0.2, 200, 1, 0), row(cost.NoRepository, 0, 50, 0, 1)},
		Jobs:         []cost.Row{row("9#1", 1.5, 300, 1, 0), row("7#1", 0.3, 300, 2, 0)},
		Days:         []cost.Row{row("2026-11-28", 0.1, 100, 1, 0), row("2026-11-29", 1.7, 550, 2, 1)},
		Total:        row("total", 1.8, 650, 3, 1),
	}
	if got := sum; !equalSummary(got, want) {
		t.Fatalf("Summarize =\n%+v\nwant\n%+v", got, want)
	}
}

func equalSummary(a, b cost.Summary) bool {
	eq := func(x, y []cost.Row) bool {
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	return eq(a.Pools, b.Pools) && eq(a.Repositories, b.Repositories) && eq(a.Jobs, b.Jobs) && eq(a.Days, b.Days) && a.Total == b.Total
}

func TestBudgetWarnsOnceAMonthWhenAPoolPassesIt(t *testing.T) {
	var logs bytes.Buffer
	var events []string
	b := cost.NewBudget(map[string]float64{"linux": 10}, func(pool string, over bool) {
		events = append(events, pool+map[bool]string{true: " over", false: " under"}[over])
	}, slog.New(slog.NewTextHandler(&logs, nil)))
	nov := time.Date(2026, time.November, 28, 9, 0, 0, 0, time.UTC)

	b.Seed([]*runner.Instance{
		deleted("linux", "r", nov.AddDate(0, 0, -1), &runner.Cost{USD: 6}),
		deleted("linux", "r", nov.AddDate(0, -1, 0), &runner.Cost{USD: 100}),      // October's
		deleted("linux", "r", nov, &runner.Cost{Unknown: "no price", Seconds: 9}), // unknown adds nothing
	}, nov)
	if got := b.MonthToDate("linux"); got != 6 {
		t.Fatalf("seeded month to date = %v, want 6", got)
	}
	b.InstanceChanged(deleted("gpu", "r", nov, &runner.Cost{USD: 50}), runner.StatusDeleting) // no budget
	b.InstanceChanged(deleted("linux", "r", nov, &runner.Cost{USD: 4}), runner.StatusDeleting)
	if len(events) != 0 {
		t.Fatalf("events at exactly the budget: %v, want none", events)
	}
	b.InstanceChanged(deleted("linux", "r", nov, &runner.Cost{USD: 0.5}), runner.StatusDeleting)
	b.InstanceChanged(deleted("linux", "r", nov, &runner.Cost{USD: 0.5}), runner.StatusDeleting)
	if len(events) != 1 || events[0] != "linux over" {
		t.Fatalf("events = %v, want one warning", events)
	}
	if line := logs.String(); !strings.Contains(line, "level=WARN") || !strings.Contains(line, "pool=linux") ||
		!strings.Contains(line, "month_to_date_usd=10.5") || !strings.Contains(line, "monthly_budget_usd=10") {
		t.Fatalf("log = %q", line)
	}
	b.InstanceChanged(deleted("linux", "r", nov.AddDate(0, 1, 0), &runner.Cost{USD: 1}), runner.StatusDeleting)
	if len(events) != 2 || events[1] != "linux under" || b.MonthToDate("linux") != 1 {
		t.Fatalf("a new month: events %v, month to date %v", events, b.MonthToDate("linux"))
	}
}
