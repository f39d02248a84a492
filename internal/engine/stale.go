package engine

import "github.com/runfleet/runfleet/internal/runner"

// A runner scale set's broker delivers a message again when it likes:
// after later messages, after the message was acknowledged, after the job
// it speaks of was canceled (issue #36). Since a JobCompleted that is
// canceled and names no runner is recorded as waiting — GitHub may assign
// the job again — a late copy of the job's earlier JobAssigned looked
// exactly like that re-assignment and reopened a job GitHub had finished:
// idle machine after idle machine for it until the 24 h limit. Each
// scale-set event therefore carries where it stood in its queue and the
// assignment it is about, and the ledger keeps the newest of both per job.

// staleJobEvent is why ev says something older than what job records —
// a duplicate delivered after later news — or "" when it does not (or
// cannot be told apart). Only the events that move demand are judged:
// queued, which would reopen a job a canceled assignment paused, and
// waiting, which would pause a job assigned again since. The others
// cannot move a job back: served, closed and expired are final, and a
// late in_progress or completed is weighed against the instance it
// names (onInProgress, onCompleted). Webhook events carry neither a place
// nor an assignment time and are never stale here.
func staleJobEvent(job *runner.Job, ev runner.JobEvent) string {
	if job == nil || ev.Action != runner.ActionQueued && ev.Action != runner.ActionWaiting {
		return ""
	}
	switch {
	case ev.Seq.Before(job.ScaleSetSeq):
		return "from an earlier place in the scale set's queue than the job's latest event"
	case !ev.AssignedAt.IsZero() && ev.AssignedAt.Before(job.AssignedAt):
		return "about an earlier assignment than the job's latest"
	}
	return ""
}

// noteScaleSetNews records on next, a job's next version, the place and
// the assignment time of ev, an event applied to it: the newest of what
// it knew and what ev says. An event of another scale set (GitHub deleted
// the job's and runfleet made it anew) replaces the place: the old
// queue is gone with its scale set, so nothing of it can come late.
func noteScaleSetNews(next *runner.Job, ev runner.JobEvent) {
	if !ev.Seq.IsZero() && !ev.Seq.Before(next.ScaleSetSeq) {
		next.ScaleSetSeq = ev.Seq
	}
	if ev.AssignedAt.After(next.AssignedAt) {
		next.AssignedAt = ev.AssignedAt
	}
}
