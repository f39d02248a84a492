package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/runner"
)

func TestJobTableSaysWhatEachJobWaitsFor(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	jobs := []httpapi.Job{
		{Job: &runner.Job{ID: 1, RunAttempt: 1, Pool: "a", Status: runner.JobOpen, QueuedAt: at.Add(-7 * 24 * time.Hour)}, Wait: runner.WaitCapacity},
		{Job: &runner.Job{ID: 2, RunAttempt: 1, Pool: "a", Status: runner.JobOpen, QueuedAt: at.Add(-90 * time.Second), NextAttemptAt: at.Add(4 * time.Second)}, Wait: runner.WaitBackoff},
		{Job: &runner.Job{ID: 3, RunAttempt: 2, Pool: "b", Status: runner.JobOpen, QueuedAt: at.Add(-5 * time.Second), Instance: "runfleet-b-3-2"}, Wait: runner.WaitBooting},
		{Job: &runner.Job{ID: 4, RunAttempt: 1, Pool: "b", Status: runner.JobWaiting, QueuedAt: at.Add(-time.Hour)}, Wait: runner.WaitApproval},
		// Named on the job, but on its way out: the server says capacity.
		{Job: &runner.Job{ID: 5, RunAttempt: 1, Pool: "b", Status: runner.JobOpen, QueuedAt: at.Add(-time.Minute), Instance: "runfleet-b-5-1-r3"}, Wait: runner.WaitCapacity},
		{Job: &runner.Job{ID: 6, RunAttempt: 1, Status: runner.JobUnmatched, QueuedAt: at.Add(-2 * time.Minute), UnmatchedDetail: "no pool has x46"}, Wait: runner.WaitUnmatched},
	}
	var buf bytes.Buffer
	writeJobTable(&buf, jobs, at)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 7 || !strings.HasPrefix(lines[0], "JOB") {
		t.Fatalf("table:\n%s", buf.String())
	}
	for i, want := range [][]string{
		{"1#1", " 7d ", "capacity"},
		{"2#1", "1m30s", "backoff: next try in 4s"},
		{"3#2", " 5s ", "runner_booting: runner runfleet-b-3-2"},
		{"4#1", " 1h ", "approval"},
		{"5#1", "capacity"},
		{"6#1", "unmatched", "unmatched: no pool has x46"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i+1], w) {
				t.Errorf("row %d lacks %q: %s", i+1, w, lines[i+1])
			}
		}
	}
	if got := jobTotals(jobs, "", at); got != "6 open jobs waiting for: 1 approval, 1 unmatched, 2 capacity, 1 backoff, 1 runner_booting; longest wait 7d" {
		t.Errorf("totals = %q", got)
	}
	if got := jobTotals(nil, "b", at); got != "no open jobs in pool b" {
		t.Errorf("empty totals = %q", got)
	}
}

func TestInstanceTotalsCountByStatusAndSayWhatIsLeftOut(t *testing.T) {
	list := []*runner.Instance{
		{Status: runner.StatusRunning}, {Status: runner.StatusCreating}, {Status: runner.StatusRunning}, {Status: runner.StatusError},
	}
	if got := instanceTotals(list, 2, "", "", deletedNotAsked); got != "4 instances: 1 creating, 2 running, 1 error (2 on their way out not shown; --all shows them)" {
		t.Errorf("totals = %q", got)
	}
	if got := instanceTotals(list[:1], 0, "linux-x64", "", deletedNotAsked); got != "1 instance in pool linux-x64: 1 running" {
		t.Errorf("one = %q", got)
	}
	if got := instanceTotals(nil, 0, "", "error,creating", deletedNotAsked); got != "no live instances in status error,creating" {
		t.Errorf("none = %q", got)
	}

	// Deleted instances are counted apart from the live ones, and said
	// to be none when asked for and there are none.
	withDeleted := append(list[:2:2], &runner.Instance{Status: runner.StatusDeleted}, &runner.Instance{Status: runner.StatusDeleted})
	if got := instanceTotals(withDeleted, 0, "", "", deletedToo); got != "2 instances: 1 creating, 1 running; 2 deleted in the last 7 days" {
		t.Errorf("--all = %q", got)
	}
	if got := instanceTotals(list[:1], 0, "p", "", deletedToo); got != "1 instance in pool p: 1 running; none deleted in the last 7 days" {
		t.Errorf("--all, none deleted = %q", got)
	}
	if got := instanceTotals(withDeleted[2:], 0, "p", "deleted", deletedOnly); got != "2 deleted instances in pool p (records are kept 7 days)" {
		t.Errorf("--status deleted = %q", got)
	}
	if got := instanceTotals(nil, 0, "", "deleted", deletedOnly); got != "no deleted instances (records are kept 7 days)" {
		t.Errorf("--status deleted, none = %q", got)
	}
}

func TestDeletedViewFollowsTheFlags(t *testing.T) {
	running, deleted := runner.StatusRunning, runner.StatusDeleted
	for _, c := range []struct {
		all      bool
		statuses []runner.Status
		want     deletedView
	}{
		{false, nil, deletedNotAsked},
		{true, nil, deletedToo},
		{true, []runner.Status{running}, deletedNotAsked},
		{false, []runner.Status{deleted}, deletedOnly},
		{true, []runner.Status{deleted}, deletedOnly},
		{false, []runner.Status{running, deleted}, deletedToo},
	} {
		if got := deletedViewOf(c.all, c.statuses); got != c.want {
			t.Errorf("all=%v statuses=%v: %d, want %d", c.all, c.statuses, got, c.want)
		}
	}
}

func TestVersionAsJSON(t *testing.T) {
	res := runCLI(t, nil, "version", "-o", "json")
	var v map[string]any
	if res.code != exitOK || json.Unmarshal([]byte(res.stdout), &v) != nil || v["version"] != version || !strings.HasPrefix(v["go"].(string), "go") {
		t.Errorf("version -o json: %+v", res)
	}
	if res := runCLI(t, nil, "version", "-o", "table"); res.code != exitOK || !strings.HasPrefix(res.stdout, "runfleet ") {
		t.Errorf("version -o table: %+v", res)
	}
}
