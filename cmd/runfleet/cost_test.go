package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/cost"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
)

// Two jobs run on a pool priced in config at $0.36 an hour, for 30 and
// 10 minutes: `runfleet cost` says the pool, the repository and the day
// cost $0.24, and -o json carries the same sums.
func TestCostSumsWhatTheDeletedInstancesCost(t *testing.T) {
	clock := testclock.At(time.Date(2026, time.November, 28, 9, 0, 0, 0, time.UTC))
	prices := cost.NewPrices(cost.Table{Pools: map[string]float64{enginetest.Pool: 0.36}}, nil, 0, clock.Now)
	w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now, Engine: func(o *engine.Options) { o.Prices = prices }})
	mux := http.NewServeMux()
	mux.Handle(httpapi.Prefix, httpapi.New(httpapi.Options{Engine: w.Engine, Token: testAPIToken, Logger: w.Logs.Logger(slog.LevelInfo)}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	env := map[string]string{"RUNFLEET_SERVER": srv.URL, "RUNFLEET_API_TOKEN": testAPIToken}

	if res := runCLI(t, env, "cost"); res.code != exitOK || !strings.Contains(res.stdout, "no deleted instances with a cost") {
		t.Fatalf("cost before any job: %+v", res)
	}
	w.StartWorkers(1)
	t.Cleanup(w.StopWorkers)
	for _, job := range []struct {
		id  int64
		ran time.Duration
	}{{48_001, 30 * time.Minute}, {48_002, 10 * time.Minute}} {
		name := w.RunJob(job.id)
		clock.Advance(job.ran)
		w.Deliver(enginetest.Event(runner.ActionCompleted, job.id, name))
		w.WaitStatus(name, runner.StatusDeleted)
	}

	res := runCLI(t, env, "cost")
	if res.code != exitOK {
		t.Fatalf("cost: %+v", res)
	}
	for _, want := range []string{
		"POOL", enginetest.Pool + "  $0.24  0.67",
		"REPOSITORY", enginetest.Repository + "  $0.24",
		"DAY", clock.Now().UTC().Format(time.DateOnly),
		"total $0.24 over 0.67 h of machine time, 2 instances",
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("cost output lacks %q:\n%s", want, res.stdout)
		}
	}
	res = runCLI(t, env, "cost", "--by", "repository", "-o", "json")
	var sum cost.Summary
	if err := json.Unmarshal([]byte(res.stdout), &sum); err != nil || res.code != exitOK {
		t.Fatalf("cost -o json: %v %+v", err, res)
	}
	if sum.Total.USD != 0.24 || sum.Total.Seconds != 2400 || len(sum.Pools) != 1 || sum.Pools[0].Instances != 2 {
		t.Fatalf("cost -o json = %+v", sum)
	}
	res = runCLI(t, env, "cost", "--by", "job")
	if res.code != exitOK || !strings.Contains(res.stdout, "JOB") || !strings.Contains(res.stdout, "48001#1  $0.18") ||
		!strings.Contains(res.stdout, "48002#1  $0.06") || strings.Contains(res.stdout, "POOL") {
		t.Errorf("cost --by job: %+v", res)
	}
	if res := runCLI(t, env, "cost", "--by", "week"); res.code != exitUsage || !strings.Contains(res.stderr, "pool, repository, job, day") {
		t.Errorf("cost --by week: %+v", res)
	}
}

// An instance of unknown price is counted apart, and a cost under a cent
// is not shown as $0.00.
func TestCostTableShowsUnknownAndSmallCosts(t *testing.T) {
	at := time.Date(2026, time.November, 28, 9, 0, 0, 0, time.UTC)
	sum := cost.Summarize([]*runner.Instance{
		{Name: "a", Pool: "linux", Repository: "o/r", Status: runner.StatusDeleted, StatusChangedAt: at, Cost: &runner.Cost{USD: 0.002, Seconds: 20}},
		{Name: "b", Pool: "gpu", Status: runner.StatusDeleted, StatusChangedAt: at, Cost: &runner.Cost{Seconds: 3600, Unknown: "no price"}},
	})
	var buf bytes.Buffer
	writeCost(&buf, sum, "pool")
	out := buf.String()
	for _, want := range []string{"linux  <$0.01  0.01   1          0", "gpu    $0.00   1.00   0          1", "1 instance of unknown price"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "REPOSITORY") {
		t.Errorf("--by pool printed other tables:\n%s", out)
	}
}

// Seconds of machine time, as in the README tour, are said in seconds, not
// as 0.00 h.
func TestCostTotalOfSecondsSaysSeconds(t *testing.T) {
	at := time.Date(2026, time.November, 28, 9, 0, 0, 0, time.UTC)
	sum := cost.Summarize([]*runner.Instance{
		{Name: "a", Pool: "linux", Status: runner.StatusDeleted, StatusChangedAt: at, Cost: &runner.Cost{USD: 0.00005, USDPerHour: 0.0832, Seconds: 2}},
	})
	var buf bytes.Buffer
	writeCost(&buf, sum, "pool")
	if want := "total <$0.01 over 2 s of machine time, 1 instance"; !strings.Contains(buf.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, buf.String())
	}
}
