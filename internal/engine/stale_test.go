package engine

import (
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

func TestStaleJobEvent(t *testing.T) {
	assignedAt := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	seq := func(set, msg int64, i int) runner.MessageSeq {
		return runner.MessageSeq{ScaleSetID: set, MessageID: msg, Index: i}
	}
	// The job as a canceled assignment left it: waiting since message 9
	// of scale set 40, about the assignment made at assignedAt.
	waiting := &runner.Job{Status: runner.JobWaiting, ScaleSetSeq: seq(40, 9, 1), AssignedAt: assignedAt}
	ev := func(action runner.JobAction, s runner.MessageSeq, at time.Time) runner.JobEvent {
		return runner.JobEvent{Action: action, Seq: s, AssignedAt: at}
	}
	for _, tc := range []struct {
		name  string
		job   *runner.Job
		ev    runner.JobEvent
		stale bool
	}{
		{"no record yet", nil, ev(runner.ActionQueued, seq(40, 1, 0), assignedAt), false},
		{"late assigned, earlier message", waiting, ev(runner.ActionQueued, seq(40, 7, 0), assignedAt), true},
		{"late assigned, same message, earlier event", waiting, ev(runner.ActionQueued, seq(40, 9, 0), assignedAt), true},
		{"the same event again (a replay must finish its work)", waiting, ev(runner.ActionQueued, seq(40, 9, 1), assignedAt), false},
		{"re-assignment, later message", waiting, ev(runner.ActionQueued, seq(40, 12, 0), assignedAt.Add(time.Minute)), false},
		{"re-assignment, later message, same assignment time", waiting, ev(runner.ActionQueued, seq(40, 12, 0), assignedAt), false},
		{"assignment earlier than the job's latest, place unknown", waiting, ev(runner.ActionQueued, runner.MessageSeq{}, assignedAt.Add(-time.Minute)), true},
		{"earlier assignment, from another scale set", waiting, ev(runner.ActionQueued, seq(41, 1, 0), assignedAt.Add(-time.Minute)), true},
		{"another scale set (made anew), later assignment", waiting, ev(runner.ActionQueued, seq(41, 1, 0), assignedAt.Add(time.Minute)), false},
		{"late cancel, earlier message", &runner.Job{Status: runner.JobOpen, ScaleSetSeq: seq(40, 12, 0)}, ev(runner.ActionWaiting, seq(40, 9, 0), time.Time{}), true},
		{"late cancel of an earlier assignment", &runner.Job{Status: runner.JobOpen, AssignedAt: assignedAt}, ev(runner.ActionWaiting, runner.MessageSeq{}, assignedAt.Add(-time.Second)), true},
		{"webhook queued (no place, no assignment time)", waiting, ev(runner.ActionQueued, runner.MessageSeq{}, time.Time{}), false},
		{"in_progress is never judged", waiting, ev(runner.ActionInProgress, seq(40, 1, 0), time.Time{}), false},
		{"completed is never judged", waiting, ev(runner.ActionCompleted, seq(40, 1, 0), time.Time{}), false},
	} {
		if got := staleJobEvent(tc.job, tc.ev) != ""; got != tc.stale {
			t.Errorf("%s: stale %v, want %v", tc.name, got, tc.stale)
		}
	}
}

func TestNoteScaleSetNewsKeepsTheNewest(t *testing.T) {
	at := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	job := &runner.Job{ScaleSetSeq: runner.MessageSeq{ScaleSetID: 40, MessageID: 9, Index: 1}, AssignedAt: at}
	noteScaleSetNews(job, runner.JobEvent{Seq: runner.MessageSeq{ScaleSetID: 40, MessageID: 3}, AssignedAt: at.Add(-time.Hour)})
	if job.ScaleSetSeq.MessageID != 9 || !job.AssignedAt.Equal(at) {
		t.Fatalf("an older event moved the job's news back: %+v %v", job.ScaleSetSeq, job.AssignedAt)
	}
	noteScaleSetNews(job, runner.JobEvent{})
	if job.ScaleSetSeq.MessageID != 9 || !job.AssignedAt.Equal(at) {
		t.Fatalf("an event without a place (statistics, webhook) erased the job's news: %+v %v", job.ScaleSetSeq, job.AssignedAt)
	}
	noteScaleSetNews(job, runner.JobEvent{Seq: runner.MessageSeq{ScaleSetID: 41, MessageID: 1}, AssignedAt: at.Add(time.Hour)})
	if job.ScaleSetSeq != (runner.MessageSeq{ScaleSetID: 41, MessageID: 1}) || !job.AssignedAt.Equal(at.Add(time.Hour)) {
		t.Fatalf("the scale set made anew did not replace the place: %+v %v", job.ScaleSetSeq, job.AssignedAt)
	}
}
