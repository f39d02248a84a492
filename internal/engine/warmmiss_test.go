package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/warm"
)

// runfleet why's account of a wait past a pool's queue-time target: the
// forecast missed when more jobs came within the minute than it kept warm.
// The pool's ledger holds two days of bursts of three a minute from 09:50
// to 10:40, and today's from 09:50, so at 10:00 the forecast keeps three.
func TestDecideWarmMiss(t *testing.T) {
	now := testclock.At(time.Date(2026, 3, 4, 10, 5, 0, 0, time.UTC)).Now()
	queued := time.Date(now.Year(), now.Month(), now.Day(), 10, 0, 0, 0, time.UTC)
	// The ledger until the job's minute; the cases add what came in it.
	history := burstyDays(queued)
	burst := func(n int) []time.Time {
		out := append([]time.Time(nil), history...)
		for range n {
			out = append(out, queued)
		}
		return out
	}
	pool := &runner.Pool{Name: "p", MaxRunners: 10, Warm: &runner.WarmPolicy{Target: 10 * time.Second, Percentile: 90, MaxIdle: 20}}
	job := func(status runner.JobStatus, startedAfter time.Duration) *runner.Job {
		return &runner.Job{ID: 1, RunAttempt: 1, Pool: "p", Status: status, QueuedAt: queued, StatusChangedAt: queued.Add(startedAfter)}
	}
	cases := []struct {
		name     string
		pool     *runner.Pool
		job      *runner.Job
		arrivals []time.Time
		ok       bool
		want     engine.WarmMiss
		says     string
	}{
		{"no target: nothing to say", &runner.Pool{Name: "p"}, job(runner.JobServed, time.Minute), burst(8), false, engine.WarmMiss{}, ""},
		{"started within the target", pool, job(runner.JobServed, 5*time.Second), burst(8), false, engine.WarmMiss{}, ""},
		{"a closed job's start is not known", pool, job(runner.JobClosed, time.Hour), burst(8), false, engine.WarmMiss{}, ""},
		{"eight came, three kept: the forecast missed", pool, job(runner.JobServed, 48*time.Second), burst(8), true,
			engine.WarmMiss{Waited: 48 * time.Second, Target: 10 * time.Second, Kept: 3, Came: 8, Missed: true}, "because the forecast missed"},
		{"two came, three kept: not the forecast", pool, job(runner.JobServed, 48*time.Second), burst(2), true,
			engine.WarmMiss{Waited: 48 * time.Second, Target: 10 * time.Second, Kept: 3, Came: 2}, "not the forecast"},
		{"still open, waiting five minutes", pool, job(runner.JobOpen, 0), burst(8), true,
			engine.WarmMiss{Waited: 5 * time.Minute, Target: 10 * time.Second, Kept: 3, Came: 8, Missed: true}, "it kept 3, and 8 of the pool's jobs came"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := engine.DecideWarmMiss(c.pool, c.job, warm.Kept{}, c.arrivals, now)
			if ok != c.ok || got != c.want {
				t.Fatalf("DecideWarmMiss = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
			if ok && !strings.Contains(got.Sentence(), c.says) {
				t.Errorf("%q does not say %q", got.Sentence(), c.says)
			}
		})
	}
}
