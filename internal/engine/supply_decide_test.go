package engine

import (
	"context"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

func TestDecideSupply(t *testing.T) {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	later := now.Add(time.Minute)
	pool := &runner.Pool{Name: "p"}
	verify := func(context.Context, *runner.Job) (jobAnswer, error) { return jobAnswer{}, nil }
	cover := &runner.Instance{Name: "runfleet-p-1-1"}
	open := func(mod func(j *runner.Job)) *runner.Job {
		j := &runner.Job{ID: 1, RunAttempt: 1, Pool: "p", Status: runner.JobOpen}
		if mod != nil {
			mod(j)
		}
		return j
	}
	read := func(j *runner.Job, c *runner.Instance) supplyFacts {
		return supplyFacts{job: j, pool: pool, coverRead: true, cover: c, now: now}
	}
	for _, tc := range []struct {
		name  string
		facts supplyFacts
		call  supplyCall
		want  supplyStep
	}{
		{"served job", supplyFacts{job: open(func(j *runner.Job) { j.Status = runner.JobServed }), pool: pool}, supplyCall{}, supplySettled},
		{"waiting job", supplyFacts{job: open(func(j *runner.Job) { j.Status = runner.JobWaiting }), pool: pool}, supplyCall{}, supplySettled},
		{"pool gone", supplyFacts{job: open(nil)}, supplyCall{}, supplyNoPool},
		{"cover not read yet", supplyFacts{job: open(nil), pool: pool}, supplyCall{}, supplyReadCover},
		{"covered", read(open(nil), cover), supplyCall{}, supplyCovered},
		{"covered while backing off", read(open(func(j *runner.Job) { j.NextAttemptAt = later }), cover), supplyCall{}, supplyCovered},
		{"backing off, event", read(open(func(j *runner.Job) { j.NextAttemptAt = later }), nil), supplyCall{}, supplyBackingOff},
		{"backing off, engine ended its instance", read(open(func(j *runner.Job) { j.NextAttemptAt = later }), nil), supplyCall{schedule: true}, supplyScheduleRetry},
		{"backing off, the retry sent for it", read(open(func(j *runner.Job) { j.NextAttemptAt = later }), nil), supplyCall{retry: true, notBefore: later}, supplyScheduleRetry},
		{"backing off, a stale retry", read(open(func(j *runner.Job) { j.NextAttemptAt = later }), nil), supplyCall{retry: true, notBefore: now}, supplyOvertaken},
		{"backoff over", read(open(func(j *runner.Job) { j.NextAttemptAt = now }), nil), supplyCall{}, supplyAdmit},
		{"shape refused", read(open(func(j *runner.Job) { j.Labels = []string{"runfleet/cpu=2"} }), nil), supplyCall{}, supplyRefused},
		{"replacement, GitHub not asked", read(open(func(j *runner.Job) { j.Made = 1 }), nil), supplyCall{verify: verify}, supplyVerify},
		{"replacement, GitHub asked", read(open(func(j *runner.Job) { j.Made, j.CheckedMade = 1, 1 }), nil), supplyCall{verify: verify}, supplyAdmit},
		{"replacement on an event", read(open(func(j *runner.Job) { j.Made = 1 }), nil), supplyCall{}, supplyAdmit},
		{"first instance", read(open(nil), nil), supplyCall{verify: verify}, supplyAdmit},
	} {
		if got := decideSupply(tc.facts, tc.call); got != tc.want {
			t.Errorf("%s: decideSupply = %d, want %d", tc.name, got, tc.want)
		}
	}
}
