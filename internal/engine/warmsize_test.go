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
				createSettledJob(t, w, int64(i+1), enginetest.Pool, at, now.Add(time.Hour))
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
		createSettledJob(t, w, int64(i+1), pool, now.Add(-10*time.Minute), now.Add(time.Hour))
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

// createSettledJob writes a closed job of pool, queued at at, whose record
// the ledger keeps until expires.
func createSettledJob(t *testing.T, w *enginetest.World, id int64, pool string, at, expires time.Time) {
	t.Helper()
	job := &runner.Job{ID: id, RunAttempt: 1, Pool: pool, Owner: runner.Owner{Org: enginetest.Owner},
		Status: runner.JobClosed, QueuedAt: at, ExpiresAt: expires}
	if err := w.Store.CreateJob(context.Background(), job); err != nil {
		t.Fatal(err)
	}
}

// The ledger forgets a settled job a week after it settled; the forecast
// reads four. A pool whose reconciler has run through those weeks
// forecasts exactly as it would had the ledger forgotten nothing (the
// record kept per pool fills in what it forgot), and not as a ledger of
// one week alone would. The pool's weekday mornings brought matrices of four for
// three weeks and of one since: the week the ledger still holds says one
// warm runner; the four weeks say more.
func TestWarmForecastReadsTheWeeksTheLedgerForgot(t *testing.T) {
	date := time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)
	now := warm.WeekStart(testclock.At(date).Now()).Add(4*warm.Week + 2*warm.Day + 10*time.Hour)
	start := warm.WeekStart(now).Add(-4 * warm.Week)
	var queued []time.Time
	for day := start; day.Before(now); day = day.Add(warm.Day) {
		if wd := day.Weekday(); wd == time.Saturday || wd == time.Sunday {
			continue
		}
		size := 4
		if !day.Before(now.Add(-8 * warm.Day)) {
			size = 1
		}
		for at := day.Add(9*time.Hour + 30*time.Minute); at.Before(day.Add(11*time.Hour+30*time.Minute)) && at.Before(now); at = at.Add(4 * time.Minute) {
			for range size {
				queued = append(queued, at)
			}
		}
	}
	// decide returns the pool's decision at now in a world whose ledger
	// forgets jobs (settled an hour after queued) when forgets is set, its
	// reconciler having passed twice a day from start when passed is.
	decide := func(t *testing.T, forgets, passed bool) engineWarm {
		// At moves the date it is given (testclock.ShiftEnv): the clock is
		// set from the date, then moved to start.
		clock := testclock.At(date)
		clock.Advance(start.Sub(clock.Now()))
		w := newWarmWorld(t, clock, func(p *runner.Pool) { p.MaxRunners = 40 })
		ctx := context.Background()
		for i, at := range queued {
			expires := now.Add(time.Hour)
			if forgets {
				expires = at.Add(time.Hour + store.DeletedRetention)
			}
			createSettledJob(t, w, int64(i+1), enginetest.Pool, at, expires)
		}
		if passed {
			for clock.Now().Before(now) {
				if _, err := w.Engine.Reconcile(ctx); err != nil {
					t.Fatal(err)
				}
				clock.Advance(min(12*time.Hour, now.Sub(clock.Now())))
			}
		}
		clock.AdvanceTo(now)
		rep, err := w.Engine.Reconcile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Warm) != 1 {
			t.Fatalf("decided %+v; want one pool", rep.Warm)
		}
		d := rep.Warm[0]
		return engineWarm{d.Need, d.Hot, d.PerMinute, d.Level, d.HistoryDays}
	}
	whole := decide(t, false, true)
	kept := decide(t, true, true)
	week := decide(t, true, false)
	if kept != whole {
		t.Errorf("with the weeks kept: %+v; want %+v, as from a ledger that forgets nothing", kept, whole)
	}
	if kept.HistoryDays < 28 || week.HistoryDays > 7 {
		t.Errorf("history of %g days kept, %g from the ledger alone; want four weeks or more, and a week at most", kept.HistoryDays, week.HistoryDays)
	}
	if week == whole || week.Need != 1 {
		t.Errorf("from the ledger's week alone: %+v; the test needs it to differ from %+v (need 1)", week, whole)
	}
}

type engineWarm struct {
	Need, Hot                     int
	PerMinute, Level, HistoryDays float64
}

// A kept-arrivals record that does not decode (written by something else,
// or damaged) is read as nothing kept and replaced at the first pass, even
// when no day is ready to keep yet: the pool is still sized from its
// ledger, and the warning is not repeated every pass.
func TestUndecodableKeptArrivalsAreReplaced(t *testing.T) {
	clock := testclock.At(time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC))
	now := clock.Now()
	w := newWarmWorld(t, clock, nil)
	ctx := context.Background()
	name := "warm/arrivals/" + enginetest.Pool
	if err := w.Store.PutCursor(ctx, &store.Cursor{Name: name, Value: "not what runfleet writes"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		at := now.Add(-time.Duration(10+i) * time.Minute)
		createSettledJob(t, w, int64(i+1), enginetest.Pool, at, now.Add(time.Hour))
	}
	rep, err := w.Engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warm) != 1 || rep.Warm[0].Hot != 1 {
		t.Fatalf("decided %+v; want the pool sized from its ledger (1 warm runner)", rep.Warm)
	}
	cur, err := w.Store.GetCursor(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := warm.DecodeKept(cur.Value); err != nil || cur.Version != 2 {
		t.Fatalf("kept arrivals %q at version %d (%v); want them replaced by a record that decodes", cur.Value, cur.Version, err)
	}
}

// newWarmWorld is a world on clock whose one pool has a 10 s target at
// p90 (max_idle 20), adjusted by adjust.
func newWarmWorld(t *testing.T, clock *testclock.Clock, adjust func(*runner.Pool)) *enginetest.World {
	return enginetest.NewWorld(t, enginetest.Options{
		Now: clock.Now,
		Pools: enginetest.OnePool(func(p *runner.Pool) {
			p.Warm = &runner.WarmPolicy{Target: 10 * time.Second, Percentile: 90, MaxIdle: 20}
			if adjust != nil {
				adjust(p)
			}
		}),
	})
}
