package engine

import (
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// Stuck reports whether inst is past the bound of its status at now — the
// same bounds reconcileOne acts on (keep the two in step): pending work or an error past its due
// time plus the takeover grace (its message presumed lost), creating past the
// creating timeout, deleting past the provider timeout (each plus the same
// grace). Running and stopped instances are never stuck here: a runner that
// never takes its job is the job ledger's concern.
func (e *Engine) Stuck(inst *runner.Instance, now time.Time) bool {
	grace := e.opts.TakeoverGrace
	switch inst.Status {
	case runner.StatusPendingCreate, runner.StatusPendingDelete, runner.StatusPendingForceDelete, runner.StatusError:
		due := inst.StatusChangedAt
		if inst.NextAttemptAt.After(due) {
			due = inst.NextAttemptAt
		}
		return now.Sub(due) > grace
	case runner.StatusCreating:
		return now.Sub(inst.StatusChangedAt) > e.creatingTakeover(inst.Pool)
	case runner.StatusDeleting:
		return now.Sub(inst.StatusChangedAt) > e.providerTimeout(inst.Pool)+grace
	}
	return false
}
