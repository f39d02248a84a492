package sim

import (
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// ScaleSetConfig gives the world a runner scale set beside the webhook
// pools: a share of the jobs targets it (runs-on: its name), runfleet
// serves it from a pool of its own through the real listener, and the
// Actions service misbehaves as Faults say.
type ScaleSetConfig struct {
	// Name is the scale set's name.
	Name string
	// Share is the chance that a job targets the scale set.
	Share float64
	// MaxRunners is the scale-set pool's max_runners, which the listener
	// sends as the scale set's capacity.
	MaxRunners int
	Faults     ScaleSetFaults
}

// ScaleSetFaults are the Actions service's misbehaviours; each is a
// chance per occurrence unless it says otherwise.
type ScaleSetFaults struct {
	// ServerError: a call answers 5xx before any effect;
	// ErrorAfterEffect: after it (a message acknowledged, a runner
	// registered, a session made that then holds the scale set).
	ServerError, ErrorAfterEffect float64
	// Slow: a call takes 5–40 s instead of under 0.3 s.
	Slow float64
	// Duplicate: a poll answers the message it answered last again,
	// acknowledged or not.
	Duplicate float64
	// LateDuplicate: a poll answers a copy of any message delivered
	// before — after later messages, after its acknowledgement, after
	// the job it speaks of was canceled or completed (issue #36).
	LateDuplicate float64
	// CancelAssigned: per assignment, GitHub cancels the job for good
	// (a user's cancel) 1–30 s later if no runner took it by then:
	// JobCompleted, canceled, no runner — the message a taken-back
	// assignment sends too, with no JobAssigned after it.
	CancelAssigned float64
	// TokenExpired: a queue call (poll, ack) meets an expired queue token
	// (401), and the client refreshes the session; RefreshNotFound: such
	// a refresh finds the session dropped (404).
	TokenExpired, RefreshNotFound float64
	// SessionDropped: per poll, GitHub drops the session while it waits.
	SessionDropped float64
	// Reassign: per assignment, GitHub takes it back (JobCompleted,
	// canceled, no runner) and assigns the job again, at most three times.
	Reassign float64
	// Deleted: per seed, GitHub deletes the scale set, once no runner of
	// it holds a job, at a random moment of the load — with whatever its
	// queue still holds.
	Deleted float64
}

// DefaultScaleSet is the scale set of TestSimulationScaleSet.
func DefaultScaleSet() ScaleSetConfig {
	return ScaleSetConfig{
		Name: "rf-linux", Share: 0.4, MaxRunners: 6,
		Faults: ScaleSetFaults{
			ServerError: 0.04, ErrorAfterEffect: 0.02, Slow: 0.03, Duplicate: 0.05, LateDuplicate: 0.05, CancelAssigned: 0.05,
			TokenExpired: 0.03, RefreshNotFound: 0.3, SessionDropped: 0.01,
			Reassign: 0.15, Deleted: 0.3,
		},
	}
}

// planScaleSetDeletion has GitHub delete the scale set once, on some
// seeds, during the load.
func (w *world) planScaleSetDeletion(lastArrival time.Time) {
	s := w.actions
	if s == nil || !chance(w.rng, s.cfg.Faults.Deleted) {
		return
	}
	w.sched.at(w.now().Add(between(w.rng, 0, lastArrival.Sub(w.now()))), 0, s.deleteSet)
}

// byLedgerID is the job a ledger record is about.
func (g *githubWorld) byLedgerID(id int64) *ghJob {
	if _, ok := runner.RunnerRequestID(id); ok && g.w.actions != nil {
		return g.w.actions.byLedger[id]
	}
	return g.jobByID[id]
}

// checkJob holds a scale-set job to the final checks: nothing excuses it
// from being served — GitHub told the scale set's queue, which keeps a
// message until runfleet acknowledges it.
func (s *actionsService) checkJob(j *ghJob) {
	w := s.w
	w.stats.inc("scaleset.jobs")
	if j.runner != nil && j.runner.set != nil {
		w.stats.inc("scaleset.jobs_served")
	}
	if j.ss.cancels > 0 {
		w.stats.inc("scaleset.jobs_reassigned")
	}
	if j.Status == jobQueued {
		w.violateAbout(aboutJob(j.ledgerID()), "no job left queued in GitHub that runfleet could serve",
			"scale-set job %d (rr %d, ledger %d, queued %s ago, assigned to scale set: %v) is still queued; ledger: %s",
			j.ID, j.ss.rr, j.ledgerID(), w.now().Sub(j.QueuedAt).Round(time.Second), j.ss.set != nil, w.ledgerOf(j))
	}
}
