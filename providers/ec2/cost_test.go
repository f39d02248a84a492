package ec2_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/runfleet/runfleet/internal/cost"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/ec2"
)

// costWorld runs the engine with the EC2 provider on moto, on a stopped
// clock, pricing machines with prices.
func costWorld(t *testing.T, w *world, p *ec2.Provider, clock *testclock.Clock, prices engine.Prices) *enginetest.World {
	t.Helper()
	return enginetest.NewWorld(t, enginetest.Options{
		InstallationID: w.installationID,
		Now:            clock.Now,
		Pools:          enginetest.OnePool(func(p *runner.Pool) { p.BootstrapTimeout = time.Minute }),
		WrapProvider:   func(string, providers.Provider) providers.Provider { return p },
		Engine: func(o *engine.Options) {
			o.MetadataURL = "https://control.example/metadata"
			o.CallbackURL = "https://control.example/callbacks"
			o.InstanceToken = func(inst, _ string, attempt int, _ time.Duration) (string, error) {
				return "token-" + inst + "-" + strconv.Itoa(attempt), nil
			}
			o.Prices = prices
		},
	})
}

// runFor serves job id on a machine of ew's pool, lets it run for ran on
// the clock, completes it and returns its instance once deleted.
func runFor(t *testing.T, ew *enginetest.World, clock *testclock.Clock, id int64, ran time.Duration) *runner.Instance {
	t.Helper()
	name := enginetest.InstanceName(id)
	ew.Deliver(enginetest.Event(runner.ActionQueued, id, ""))
	ew.StartWorkers(1)
	t.Cleanup(ew.StopWorkers)
	ew.WaitStatus(name, runner.StatusRunning)
	clock.Advance(ran)
	ew.Deliver(enginetest.Event(runner.ActionCompleted, id, name))
	return ew.WaitStatus(name, runner.StatusDeleted)
}

// Acceptance (issue #22, item 4): a job on a known instance type for a
// known time costs what the price fact says. The machine's type and
// market come from EC2 (moto), the price from the config's table.
func TestAJobOnAKnownInstanceTypeForAKnownTimeCostsWhatThePriceSays(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	clock := testclock.At(time.Date(2026, time.November, 28, 9, 0, 0, 0, time.UTC))
	prices := cost.NewPrices(cost.Table{Machines: map[string]float64{
		cost.MachineKey("t3.large", runner.MarketOnDemand): 0.0832,
		cost.MachineKey("t3.large", runner.MarketSpot):     0.0250, // not this machine's market
	}}, nil, 0, clock.Now)
	ew := costWorld(t, w, w.provider(enginetest.Pool, w.settings()), clock, prices)

	gone := runFor(t, ew, clock, 47_001, 90*time.Minute)

	if gone.MachineType != "t3.large" || gone.Market != runner.MarketOnDemand {
		t.Fatalf("machine = %q %q, want t3.large on-demand", gone.MachineType, gone.Market)
	}
	want := runner.Cost{USD: 0.1248, USDPerHour: 0.0832, Seconds: 5400} // 1.5 h × 0.0832
	if gone.Cost == nil || *gone.Cost != want {
		t.Fatalf("cost = %+v, want %+v", gone.Cost, want)
	}
	sum := cost.Summarize([]*runner.Instance{gone})
	if len(sum.Pools) != 1 || sum.Pools[0].Key != enginetest.Pool || sum.Pools[0].USD != 0.1248 ||
		len(sum.Repositories) != 1 || sum.Repositories[0].Key != enginetest.Repository ||
		len(sum.Jobs) != 1 || sum.Jobs[0].Key != "47001#1" || sum.Jobs[0].USD != 0.1248 ||
		len(sum.Days) != 1 || sum.Days[0].Key != clock.Now().UTC().Format(time.DateOnly) {
		t.Fatalf("summary = %+v", sum)
	}
}

// A spot machine no table prices is priced from EC2's spot price history
// (what moto serves), read once and cached.
func TestASpotMachineIsPricedFromTheSpotPriceHistory(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.settings()
	s.Spot = true
	p := w.provider(enginetest.Pool, s)
	clock := testclock.At(time.Date(2026, time.November, 28, 9, 0, 0, 0, time.UTC))
	prices := cost.NewPrices(cost.Table{}, map[string]providers.PriceReader{enginetest.Pool: p}, 0, clock.Now)
	ew := costWorld(t, w, p, clock, prices)

	gone := runFor(t, ew, clock, 47_002, time.Hour)

	if gone.MachineType != "t3.large" || gone.Market != runner.MarketSpot {
		t.Fatalf("machine = %q %q, want t3.large spot", gone.MachineType, gone.Market)
	}
	hourly := highestSpotPrice(t, w, "t3.large")
	if gone.Cost == nil || !gone.Cost.Known() || gone.Cost.USDPerHour != hourly || gone.Cost.Seconds != 3600 || gone.Cost.USD != hourly {
		t.Fatalf("cost = %+v, want %v for an hour", gone.Cost, hourly)
	}
}

// An instance type nobody prices costs "unknown", and the delete completes.
func TestAnUnpricedMachineIsDeletedWithAnUnknownCost(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	clock := testclock.At(time.Date(2026, time.November, 28, 9, 0, 0, 0, time.UTC))
	p := w.provider(enginetest.Pool, w.settings())
	prices := cost.NewPrices(cost.Table{}, map[string]providers.PriceReader{enginetest.Pool: p}, 0, clock.Now)
	ew := costWorld(t, w, p, clock, prices)

	gone := runFor(t, ew, clock, 47_003, 10*time.Minute)

	if gone.Cost == nil || gone.Cost.Known() || gone.Cost.Seconds != 600 || gone.Cost.Unknown == "" {
		t.Fatalf("cost = %+v, want unknown over 600 s", gone.Cost)
	}
}

// highestSpotPrice is the highest current spot price of machineType
// across moto's zones, read straight from the API.
func highestSpotPrice(t *testing.T, w *world, machineType string) float64 {
	t.Helper()
	out, err := w.ec2.DescribeSpotPriceHistory(context.Background(), &awsec2.DescribeSpotPriceHistoryInput{
		InstanceTypes:       []ec2types.InstanceType{ec2types.InstanceType(machineType)},
		ProductDescriptions: []string{"Linux/UNIX"},
	})
	if err != nil {
		t.Fatalf("DescribeSpotPriceHistory: %v", err)
	}
	latest := map[string]struct {
		at    time.Time
		price float64
	}{}
	for _, h := range out.SpotPriceHistory {
		price, err := strconv.ParseFloat(aws.ToString(h.SpotPrice), 64)
		if err != nil {
			t.Fatalf("spot price %q: %v", aws.ToString(h.SpotPrice), err)
		}
		zone := aws.ToString(h.AvailabilityZone)
		if cur, ok := latest[zone]; !ok || aws.ToTime(h.Timestamp).After(cur.at) {
			latest[zone] = struct {
				at    time.Time
				price float64
			}{aws.ToTime(h.Timestamp), price}
		}
	}
	if len(latest) == 0 {
		t.Fatalf("moto has no spot price history for %s", machineType)
	}
	var highest float64
	for _, r := range latest {
		highest = max(highest, r.price)
	}
	return highest
}
