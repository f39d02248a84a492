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
		w := enginetest.NewWorld(t, enginetest.Options{
			Now: clock.Now,
			Pools: enginetest.OnePool(func(p *runner.Pool) {
				p.MaxRunners = 40
				p.Warm = &runner.WarmPolicy{Target: 10 * time.Second, Percentile: 90, MaxIdle: 20}
			}),
		})
		ctx := context.Background()
		for i, at := range queued {
			job := &runner.Job{ID: int64(i + 1), RunAttempt: 1, Pool: enginetest.Pool, Owner: runner.Owner{Org: enginetest.Owner},
				Status: runner.JobClosed, QueuedAt: at, ExpiresAt: now.Add(time.Hour)}
			if forgets {
				job.ExpiresAt = at.Add(time.Hour + store.DeletedRetention)
			}
			if err := w.Store.CreateJob(ctx, job); err != nil {
				t.Fatal(err)
			}
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
	w := enginetest.NewWorld(t, enginetest.Options{
		Now: clock.Now,
		Pools: enginetest.OnePool(func(p *runner.Pool) {
			p.MaxRunners = 10
			p.Warm = &runner.WarmPolicy{Target: 10 * time.Second, Percentile: 90, MaxIdle: 20}
		}),
	})
	ctx := context.Background()
	name := "warm/arrivals/" + enginetest.Pool
	if err := w.Store.PutCursor(ctx, &store.Cursor{Name: name, Value: "not what runfleet writes"}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		at := now.Add(-time.Duration(10+i) * time.Minute)
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
