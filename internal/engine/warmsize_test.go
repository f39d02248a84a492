package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/warm"
)

// A pool with a queue-time target keeps the warm runners its ledger
// forecasts, and none when none are forecast; min_idle stays the floor,
// max_idle and max_runners the ceilings. The ledger here holds two days of
// a pool whose jobs come in bursts of three every minute from 09:50 to
// 10:40 and never otherwise, so 10:00 forecasts three at once and 03:00
// nothing.
func TestWarmSizeFromTheLedger(t *testing.T) {
	cases := []struct {
		name                        string
		at                          int // hour of the day the pass runs
		minIdle, maxIdle, maxRunner int
		want                        int
		reason                      string
	}{
		{"the busy hour: three at once", 10, 0, 20, 10, 3, warm.ReasonHot},
		{"the night: scale to zero", 3, 0, 20, 10, 0, warm.ReasonNothingForecast},
		{"the night keeps min_idle", 3, 1, 20, 10, 1, warm.ReasonNothingForecast},
		{"max_idle caps the forecast", 10, 0, 2, 10, 2, warm.ReasonHot},
		{"never above max_runners", 10, 0, 20, 1, 1, warm.ReasonHot},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := testclock.At(time.Date(2026, 3, 4, c.at, 0, 0, 0, time.UTC))
			now := clock.Now()
			w := enginetest.NewWorld(t, enginetest.Options{
				Now: clock.Now,
				Pools: enginetest.OnePool(func(p *runner.Pool) {
					p.MinIdle, p.MaxRunners = c.minIdle, c.maxRunner
					p.Warm = &runner.WarmPolicy{Target: 10 * time.Second, Percentile: 90, MaxIdle: c.maxIdle}
				}),
			})
			ctx := context.Background()
			for i, at := range burstyDays(now) {
				job := &runner.Job{ID: int64(i + 1), RunAttempt: 1, Pool: enginetest.Pool, Owner: runner.Owner{Org: enginetest.Owner},
					Status: runner.JobClosed, QueuedAt: at, ExpiresAt: now.Add(time.Hour)}
				if err := w.Store.CreateJob(ctx, job); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := w.Engine.Reconcile(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rep.WarmCreated != c.want || len(rep.Warm) != 1 || rep.Warm[0].Hot != c.want || rep.Warm[0].Reason != c.reason {
				t.Fatalf("created %d warm runners, decided %+v; want %d (%s)", rep.WarmCreated, rep.Warm, c.want, c.reason)
			}
			// The next pass counts what the warm runners cost: each stood
			// idle (no job) the 30 s between the passes.
			clock.Advance(30 * time.Second)
			rep, err = w.Engine.Reconcile(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if rep.WarmCreated != 0 || rep.Warm[0].Idle != c.want || rep.Warm[0].IdleSeconds != float64(30*c.want) {
				t.Fatalf("second pass: created %d, %+v; want none more and %d idle for 30 s each", rep.WarmCreated, rep.Warm[0], c.want)
			}
		})
	}
}

// burstyDays are the queued times of a pool whose jobs came, on the two
// days before now's and today until now, in bursts of three every minute
// from 09:50 to 10:40, and never otherwise: at 10:00 today's first ten
// minutes of bursts have come, as on the days before.
func burstyDays(now time.Time) []time.Time {
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	var out []time.Time
	for d := 2; d >= 0; d-- {
		for m := range 50 {
			at := day.Add(-time.Duration(d)*24*time.Hour + 9*time.Hour + 50*time.Minute + time.Duration(m)*time.Minute)
			if at.Before(now) {
				out = append(out, at, at, at)
			}
		}
	}
	return out
}

// Every pool with a target is read from the ledger in one call a pass: on
// DynamoDB each read is a Scan of the whole table, so ten pools must not
// cost ten.
func TestWarmPoolsAreReadInOneCall(t *testing.T) {
	clock := testclock.At(time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC))
	now := clock.Now()
	pools := enginetest.OnePool(func(p *runner.Pool) {
		p.Warm = &runner.WarmPolicy{Target: 10 * time.Second, Percentile: 90, MaxIdle: 20}
	})
	second := pools[0]
	second.Name, second.Labels = "linux-arm64", []string{"self-hosted", "linux", "arm64"}
	var calls [][]string
	w := enginetest.NewWorld(t, enginetest.Options{
		Now:   clock.Now,
		Pools: append(pools, second),
		WrapStore: func(s store.Store) store.Store {
			return &countingArrivals{Store: s, calls: &calls}
		},
	})
	ctx := context.Background()
	for i, pool := range []string{pools[0].Name, second.Name} {
		at := now.Add(-10 * time.Minute)
		job := &runner.Job{ID: int64(i + 1), RunAttempt: 1, Pool: pool, Owner: runner.Owner{Org: enginetest.Owner},
			Status: runner.JobClosed, QueuedAt: at, ExpiresAt: now.Add(time.Hour)}
		if err := w.Store.CreateJob(ctx, job); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := w.Engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || len(calls[0]) != 2 || len(rep.Warm) != 2 || rep.Warm[0].Hot != 1 || rep.Warm[1].Hot != 1 {
		t.Fatalf("arrivals read as %v, decided %+v; want one read of both pools, and each sized from its own job", calls, rep.Warm)
	}
}

// countingArrivals records each ListArrivals call's pools.
type countingArrivals struct {
	store.Store
	calls *[][]string
}

func (c *countingArrivals) ListArrivals(ctx context.Context, pools []string, since time.Time) (map[string][]time.Time, error) {
	*c.calls = append(*c.calls, pools)
	return c.Store.(store.Arrivals).ListArrivals(ctx, pools, since)
}
