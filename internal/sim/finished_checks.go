package sim

import (
	"context"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// No machine for a job GitHub has finished (issue #36). Once runfleet has
// acknowledged the news that a job finished — its completed webhook
// answered 2xx, or the scale-set message with its final JobCompleted
// acknowledged — nothing it decides later may make an instance for that
// job: a late or duplicated message reopening it would make idle machine
// after idle machine until the 24 h limit. The check is made where the
// cloud launches a machine, against when the ledger decided to make its
// instance (the instance record's CreatedAt): an instance decided before
// the news, whose machine the provider makes a moment after, is not a
// new decision.

// heardFinished records that runfleet acknowledged that j finished.
func (g *githubWorld) heardFinished(j *ghJob) {
	if j == nil || j.Status != jobCompleted || !j.finishHeard.IsZero() {
		return
	}
	j.finishHeard = g.w.now()
}

// checkMadeForFinished fails the run when the machine being launched for
// the instance name belongs to an instance the ledger made after
// runfleet had heard that its job finished.
func (w *world) checkMadeForFinished(name string) {
	id := jobOfInstance(name)
	if id == 0 || w.gh == nil {
		return
	}
	j := w.gh.byLedgerID(id)
	if j == nil || j.finishHeard.IsZero() {
		return
	}
	decided, ok := w.instanceCreatedAt(name)
	if !ok || !decided.After(j.finishHeard) {
		return
	}
	w.stats.inc("violations.machine_for_finished_job")
	w.violateAbout(aboutJob(id), "no machine is made for a job GitHub has finished",
		"machine for %s, an instance the ledger made %s after runfleet heard job %d (attempt %d) finished (%s, at %s); ledger: %s",
		name, decided.Sub(j.finishHeard).Round(time.Millisecond), id, j.RunAttempt, j.Conclusion, j.finishHeard.Format(time.RFC3339), w.ledgerOfKey(runner.JobKey(id, j.RunAttempt)))
}

// instanceCreatedAt is when the ledger made the instance's record.
func (w *world) instanceCreatedAt(name string) (time.Time, bool) {
	st := w.openStore()
	if st == nil {
		return time.Time{}, false
	}
	inst, err := st.GetInstance(context.Background(), name)
	if err != nil {
		return time.Time{}, false
	}
	return inst.CreatedAt, true
}
