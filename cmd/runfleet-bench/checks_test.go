package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/webhook"
)

// childServing returns a child whose operator API lists instances.
func childServing(t *testing.T, instances []*runner.Instance) *child {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != httpapi.Prefix+"instances" || r.URL.Query().Get("pool") != benchPool {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(instances)
	}))
	t.Cleanup(srv.Close)
	api, err := httpapi.NewClient(srv.URL, "token", nil)
	if err != nil {
		t.Fatal(err)
	}
	return &child{name: "fake", api: api, logs: newLogWatch()}
}

func running(job int64, providerID string, runnerID int64, at time.Time) *runner.Instance {
	return &runner.Instance{
		Name: instanceOf(job), Pool: benchPool, Status: runner.StatusRunning, JobID: job, RunAttempt: 1,
		ProviderID: providerID, GitHubRunnerID: runnerID, CreatedAt: at, StatusChangedAt: at.Add(time.Millisecond),
	}
}

func TestCheckRecordsPassesOneInstancePerJob(t *testing.T) {
	start := time.Now().Add(-time.Second)
	c := childServing(t, []*runner.Instance{running(1, "p1", 11, start), running(2, "p2", 12, start.Add(time.Second))})
	res := &burstResult{jobs: 2}
	if err := checkRecords(context.Background(), c, res, []int64{1, 2}, start); err != nil {
		t.Fatal(err)
	}
	if !res.check.ok() {
		t.Fatalf("check failed: %s", verdict(res.check))
	}
	if res.issuedIn != time.Second+time.Millisecond {
		t.Errorf("issuedIn = %s, want the last running stamp minus the start (1.001s)", res.issuedIn)
	}
}

func TestCheckRecordsCatchesDuplicatesAndGaps(t *testing.T) {
	start := time.Now()
	second := running(2, "p1", 12, start) // shares job 1's provider id
	stray := running(2, "p3", 13, start)  // a second instance for job 2
	stray.Name = "runfleet-bench-2-2"
	c := childServing(t, []*runner.Instance{running(1, "p1", 11, start), second, stray})
	c.logs.note(logLine{Msg: createdMsg, Instance: instanceOf(1)})
	c.logs.note(logLine{Msg: createdMsg, Instance: instanceOf(1)})
	res := &burstResult{jobs: 3}
	if err := checkRecords(context.Background(), c, res, []int64{1, 2, 3}, start); err != nil {
		t.Fatal(err)
	}
	res.check.createdTwice = c.logs.createdTwice()
	ck := res.check
	if ck.ok() || ck.missing != 1 || ck.extraForJob != 1 || ck.sharedProviderIDs != 1 || ck.live != 3 || ck.wantLive != 3 || len(ck.createdTwice) != 1 {
		t.Fatalf("check = %+v, want job 3 missing, one extra instance for job 2, one shared provider id, one double create", ck)
	}
	for _, want := range []string{"1 jobs without an instance", "1 extra instances", "1 shared provider ids", "created twice"} {
		if !strings.Contains(verdict(ck), want) {
			t.Errorf("verdict %q lacks %q", verdict(ck), want)
		}
	}
}

func TestPayloadCarriesEachJobsID(t *testing.T) {
	p, err := loadPayload("../../examples/payloads/queued.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{1, 8_000_000_123} {
		ev, err := webhook.ParseWorkflowJob(p.forJob(id))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Action != string(runner.ActionQueued) || ev.WorkflowJob.ID != id || ev.Repository.FullName != "octo-org/hello-world" {
			t.Errorf("job %d: parsed %+v", id, ev)
		}
	}
	if _, err := loadPayload("../../examples/payloads/completed.json"); err == nil {
		t.Error("a completed delivery was accepted as the queued template")
	}
}

func TestProcReadingsOfThisProcess(t *testing.T) {
	pid := os.Getpid()
	before, err := cpuTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	spins := 0
	for deadline := time.Now().Add(200 * time.Millisecond); time.Now().Before(deadline); {
		spins++
	}
	after, err := cpuTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("CPU time did not rise over 200 ms of spinning (%d rounds): %s → %s", spins, before, after)
	}
	m, err := readMemory(pid)
	if err != nil {
		t.Fatal(err)
	}
	if m.rss <= 0 || m.peak < m.rss {
		t.Errorf("memory = %+v, want 0 < rss ≤ peak", m)
	}
}

func TestPercentileIsNearestRank(t *testing.T) {
	d := make([]time.Duration, 100)
	for i := range d {
		d[i] = time.Duration(i+1) * time.Millisecond
	}
	for p, want := range map[float64]time.Duration{0.5: 50 * time.Millisecond, 0.99: 99 * time.Millisecond, 1: 100 * time.Millisecond} {
		if got := percentile(d, p); got != want {
			t.Errorf("p%v = %s, want %s", p*100, got, want)
		}
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("percentile of nothing = %s", got)
	}
}
