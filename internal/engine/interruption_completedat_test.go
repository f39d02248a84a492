package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
)

// failedAt is the completed event of a job that failed on runnerName at
// completedAt (GitHub's completed_at; zero: the delivery does not say).
func failedAt(id int64, runnerName string, completedAt time.Time) runner.JobEvent {
	ev := failedOn(id, runnerName)
	ev.CompletedAt = completedAt
	return ev
}

// A job that failed before its machine was warned failed on its own: its
// completed event, arriving after the mark, re-runs nothing. One that
// completed after the warning, or whose completion time is not known, is
// re-run once, the completed event delivered twice.
func TestSpotReRunComparesTheJobsCompletionWithTheWarning(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	warnedAt := time.Now().UTC().Truncate(time.Second)
	for _, tc := range []struct {
		name        string
		id          int64
		completedAt time.Time
		reruns      int
	}{
		{"failed a minute before the warning", 2601, warnedAt.Add(-time.Minute), 0},
		{"failed a second before the warning", 2602, warnedAt.Add(-time.Second), 0},
		{"failed at the warning", 2603, warnedAt, 1},
		{"failed after the termination", 2604, warnedAt.Add(engine.SpotWarningLead + 30*time.Second), 1},
		{"completion time not known", 2605, time.Time{}, 1},
	} {
		inst := runningJob(t, w, tc.id)
		n := spotNotice(inst)
		n.At, n.Since = warnedAt, warnedAt
		interrupt(t, w, n, engine.InterruptionMarked)
		if got := w.Instance(inst.Name); !got.InterruptedSince.Equal(warnedAt) {
			t.Fatalf("%s: instance marked with interrupted_since %v, want the warning's time %v", tc.name, got.InterruptedSince, warnedAt)
		}
		w.GitHub.FinishJob(tc.id, "failure")
		w.Deliver(failedAt(tc.id, inst.Name, tc.completedAt))
		w.Deliver(failedAt(tc.id, inst.Name, tc.completedAt))
		w.Drain()
		if n := w.GitHub.Reruns(tc.id); n != tc.reruns {
			t.Errorf("%s: GitHub re-ran job %d %d times, want %d", tc.name, tc.id, n, tc.reruns)
		}
		job := w.Job(tc.id)
		if job.Status != runner.JobClosed || job.RerunCalls != tc.reruns {
			t.Errorf("%s: job %+v, want closed after %d re-run calls", tc.name, job, tc.reruns)
		}
		if got := w.Instance(inst.Name); got.Status != runner.StatusDeleted {
			t.Errorf("%s: instance %s, want deleted", tc.name, got.Status)
		}
	}
}

// serve's poll learns the termination, not the warning: the interruption
// starts SpotWarningLead before it. A job that completed before that is
// not re-run; one within the two minutes is (it cannot be told from one
// the shutdown failed).
func TestPolledInterruptionStartsAWarningBeforeTheTermination(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	terminated := time.Now().UTC().Truncate(time.Second)
	for _, tc := range []struct {
		name        string
		id          int64
		completedAt time.Time
		reruns      int
	}{
		{"failed before the warning", 2701, terminated.Add(-engine.SpotWarningLead - time.Second), 0},
		{"failed within the warning", 2702, terminated.Add(-time.Minute), 1},
		{"failed after the termination", 2703, terminated.Add(time.Minute), 1},
	} {
		inst := runningJob(t, w, tc.id)
		if !w.Provider.InterruptAt(inst.ProviderID, terminated) {
			t.Fatalf("%s: the simulated provider has no machine %s", tc.name, inst.ProviderID)
		}
		if _, err := w.Engine.Reconcile(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := w.Instance(inst.Name); got.Interruption != runner.InterruptionSpot || !got.InterruptedSince.Equal(terminated.Add(-engine.SpotWarningLead)) {
			t.Fatalf("%s: polled instance %+v, want marked from two minutes before the termination", tc.name, got)
		}
		w.GitHub.FinishJob(tc.id, "failure")
		w.Deliver(failedAt(tc.id, inst.Name, tc.completedAt))
		w.Drain()
		if n := w.GitHub.Reruns(tc.id); n != tc.reruns {
			t.Errorf("%s: GitHub re-ran job %d %d times, want %d", tc.name, tc.id, n, tc.reruns)
		}
	}
}
