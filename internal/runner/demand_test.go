package runner_test

import (
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// WaitOf's order is the engine's: a covering instance answers first, then
// the pool (configured, then full), then the job's own backoff; each row
// is one situation and the one word every view shows for it.
func TestWaitOf(t *testing.T) {
	now := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	later := now.Add(time.Minute)
	const name = "runfleet-linux-7-1"
	job := func(status runner.JobStatus, adjust func(*runner.Job)) *runner.Job {
		j := &runner.Job{ID: 7, RunAttempt: 1, Pool: "linux", Status: status, Instance: name, Made: 1}
		if adjust != nil {
			adjust(j)
		}
		return j
	}
	inst := func(status runner.Status, adjust func(*runner.Instance)) *runner.Instance {
		in := &runner.Instance{Name: name, Pool: "linux", Status: status, RunnerStatus: runner.RunnerPending, JobID: 7, RunAttempt: 1}
		if adjust != nil {
			adjust(in)
		}
		return in
	}
	room := runner.PoolSlots{Configured: true, MaxRunners: 2, Held: 1}
	full := runner.PoolSlots{Configured: true, MaxRunners: 2, Held: 2}
	backingOff := func(j *runner.Job) { j.NextAttemptAt = later }
	tests := []struct {
		name  string
		job   *runner.Job
		named *runner.Instance
		pool  runner.PoolSlots
		want  runner.JobWait
	}{
		{"held for approval", job(runner.JobWaiting, nil), nil, room, runner.WaitApproval},
		{"no pool matches", job(runner.JobUnmatched, nil), nil, runner.PoolSlots{}, runner.WaitUnmatched},
		{"served", job(runner.JobServed, nil), inst(runner.StatusRunning, nil), room, runner.WaitNothing},
		{"closed", job(runner.JobClosed, nil), nil, room, runner.WaitNothing},
		{"covered in a full pool: its runner, not capacity", job(runner.JobOpen, backingOff), inst(runner.StatusCreating, nil), full, runner.WaitCreating},
		{"covered in a pool no longer configured", job(runner.JobOpen, nil), inst(runner.StatusRunning, nil), runner.PoolSlots{}, runner.WaitBooting},
		{"create waiting for GitHub's budget", job(runner.JobOpen, nil), inst(runner.StatusPendingCreate, func(in *runner.Instance) {
			in.WaitingForGitHub, in.NextAttemptAt = later, later
		}), room, runner.WaitGitHubBudget},
		{"create retried after a fault", job(runner.JobOpen, nil), inst(runner.StatusPendingCreate, func(in *runner.Instance) {
			in.NextAttemptAt, in.ProviderFault = later, "boom"
		}), room, runner.WaitCreateBackoff},
		{"create's retry due", job(runner.JobOpen, nil), inst(runner.StatusPendingCreate, func(in *runner.Instance) {
			in.NextAttemptAt, in.ProviderFault = now.Add(-time.Second), "boom"
		}), room, runner.WaitCreating},
		{"runner idle", job(runner.JobOpen, nil), inst(runner.StatusRunning, func(in *runner.Instance) { in.RunnerStatus = runner.RunnerIdle }), room, runner.WaitOnline},
		{"runner took it", job(runner.JobOpen, nil), inst(runner.StatusRunning, func(in *runner.Instance) { in.RunnerStatus = runner.RunnerActive }), room, runner.WaitOnline},
		{"pool gone, nothing covers", job(runner.JobOpen, nil), nil, runner.PoolSlots{}, runner.WaitPoolGone},
		{"its runner on its way out in a full pool", job(runner.JobOpen, backingOff), inst(runner.StatusPendingDelete, nil), full, runner.WaitCapacity},
		{"its runner on its way out, room in the pool, backing off", job(runner.JobOpen, backingOff), inst(runner.StatusPendingDelete, nil), room, runner.WaitBackoff},
		{"its runner took another job", job(runner.JobOpen, nil), inst(runner.StatusRunning, func(in *runner.Instance) {
			in.RunnerStatus, in.ActiveJobID = runner.RunnerActive, 8
		}), room, runner.WaitNextRunner},
		{"backoff over", job(runner.JobOpen, func(j *runner.Job) { j.NextAttemptAt = now }), nil, room, runner.WaitNextRunner},
		{"no limit is never full", job(runner.JobOpen, nil), nil, runner.PoolSlots{Configured: true, Held: 50}, runner.WaitNextRunner},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runner.WaitOf(tt.job, tt.named, tt.pool, now); got != tt.want {
				t.Errorf("WaitOf = %q, want %q", got, tt.want)
			}
		})
	}
}

// MeasureDemand counts a pool's slots from the live instances it is
// given and classifies every job with WaitOf against them.
func TestMeasureDemandCountsSlotsFromTheLiveInstances(t *testing.T) {
	now := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	live := []*runner.Instance{{Name: "a", Pool: "p", Status: runner.StatusRunning}, {Name: "b", Pool: "p", Status: runner.StatusPendingDelete}}
	jobs := []*runner.Job{
		{ID: 1, RunAttempt: 1, Pool: "p", Status: runner.JobOpen, Instance: "b", NextAttemptAt: now.Add(time.Minute)},
		{ID: 2, RunAttempt: 1, Pool: "q", Status: runner.JobOpen},
	}
	d := runner.MeasureDemand(jobs, live, map[string]int{"p": 2, "q": 1}, now)
	if d.Waits["1#1"] != runner.WaitCapacity || d.Waits["2#1"] != runner.WaitNextRunner {
		t.Errorf("waits %v, want 1#1 capacity (p holds 2 of 2), 2#1 next_runner", d.Waits)
	}
	if d.Pools["p"].Waits[runner.WaitCapacity] != 1 || d.Pools["p"].Open != 1 || d.Pools["q"].Waits[runner.WaitNextRunner] != 1 {
		t.Errorf("pools %+v", d.Pools)
	}
	d = runner.MeasureDemand(jobs, live[:1], map[string]int{"p": 2}, now)
	if d.Waits["1#1"] != runner.WaitBackoff || d.Waits["2#1"] != runner.WaitPoolGone {
		t.Errorf("waits %v, want 1#1 backoff (p holds 1 of 2), 2#1 pool_not_configured", d.Waits)
	}
}
