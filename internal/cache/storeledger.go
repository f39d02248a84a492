package cache

import (
	"context"
	"errors"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// StoreLedger answers the job token handler from runfleet's store (serve's
// and the metadata function's alike): which
// repository the machine's job is of. The job GitHub gave the runner
// (in_progress) wins over the one the machine was made for: an
// organization's runner may take any matching job.
type StoreLedger struct{ Store store.Store }

// MachineJob implements Ledger.
func (l StoreLedger) MachineJob(ctx context.Context, instance string) (MachineJob, error) {
	inst, err := l.Store.GetInstance(ctx, instance)
	if errors.Is(err, store.ErrNotFound) {
		return MachineJob{}, nil
	}
	if err != nil {
		return MachineJob{}, err
	}
	m := MachineJob{Live: machineRuns(inst.Status), Repository: inst.Repository}
	if inst.ActiveJobID != 0 {
		j, err := l.Store.GetJob(ctx, runner.JobKey(inst.ActiveJobID, inst.ActiveRunAttempt))
		switch {
		case err == nil:
			m.Repository, m.Active = j.Repository, true
		case !errors.Is(err, store.ErrJobNotFound):
			return MachineJob{}, err
		}
	}
	return m, nil
}

// machineRuns: the statuses in which a machine may be running a job. A
// machine on its way out gets no new token.
func machineRuns(s runner.Status) bool {
	return s == runner.StatusCreating || s == runner.StatusRunning || s == runner.StatusUnknown
}
