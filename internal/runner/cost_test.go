package runner_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

func TestCostOf(t *testing.T) {
	start := time.Date(2026, time.November, 28, 9, 0, 0, 0, time.UTC)
	made := &runner.Instance{Name: "i", MachineAt: start, MachineType: "m7g.large", Market: runner.MarketOnDemand}
	for _, tc := range []struct {
		name  string
		inst  *runner.Instance
		price runner.Price
		end   time.Time
		want  runner.Cost
	}{
		{"an hour at the price", made, runner.Price{USDPerHour: 0.0816}, start.Add(time.Hour),
			runner.Cost{USD: 0.0816, USDPerHour: 0.0816, Seconds: 3600}},
		{"ninety seconds", made, runner.Price{USDPerHour: 0.36}, start.Add(90 * time.Second),
			runner.Cost{USD: 0.009, USDPerHour: 0.36, Seconds: 90}},
		{"a started second counts whole", made, runner.Price{USDPerHour: 3.6}, start.Add(1500 * time.Millisecond),
			runner.Cost{USD: 0.002, USDPerHour: 3.6, Seconds: 2}},
		{"kept to a millionth of a dollar", made, runner.Price{USDPerHour: 0.0104}, start.Add(7 * time.Second),
			runner.Cost{USD: 0.00002, USDPerHour: 0.0104, Seconds: 7}},
		{"free machine", made, runner.Price{}, start.Add(time.Minute),
			runner.Cost{Seconds: 60}},
		{"no machine made costs nothing", &runner.Instance{Name: "i"}, runner.Price{USDPerHour: 1}, start,
			runner.Cost{}},
		{"no price: unknown, seconds kept", made, runner.Price{Err: errors.New("no price for m7g.large")}, start.Add(time.Minute),
			runner.Cost{Seconds: 60, Unknown: "no price for m7g.large"}},
		{"negative price: unknown", made, runner.Price{USDPerHour: -1}, start.Add(time.Minute),
			runner.Cost{Seconds: 60, Unknown: "the price -1 USD/hour is not a price"}},
		{"NaN price: unknown", made, runner.Price{USDPerHour: math.NaN()}, start.Add(time.Minute),
			runner.Cost{Seconds: 60, Unknown: "the price NaN USD/hour is not a price"}},
		{"clock ran backwards: unknown", made, runner.Price{USDPerHour: 1}, start.Add(-time.Minute),
			runner.Cost{Unknown: "the machine ended (2026-11-28T08:59:00Z) before it was made (2026-11-28T09:00:00Z)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runner.CostOf(tc.inst, tc.price, tc.end); got != tc.want {
				t.Fatalf("CostOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestCostKnown(t *testing.T) {
	var none *runner.Cost
	if none.Known() || (&runner.Cost{Unknown: "x"}).Known() || !(&runner.Cost{}).Known() {
		t.Fatal("Known: nil and unknown costs are not known; a zero cost is")
	}
}
