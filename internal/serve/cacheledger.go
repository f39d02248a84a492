package serve

import (
	"context"
	"errors"

	"github.com/runfleet/runfleet/internal/cache"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// cacheLedger answers the cache's job token handler from the store: which
// repository the machine's job is of. The job GitHub gave the runner
// (in_progress) wins over the one the machine was made for: an
// organization's runner may take any matching job.
type cacheLedger struct{ st store.Store }

// MachineJob implements cache.Ledger.
func (l cacheLedger) MachineJob(ctx context.Context, instance string) (cache.MachineJob, error) {
	inst, err := l.st.GetInstance(ctx, instance)
	if errors.Is(err, store.ErrNotFound) {
		return cache.MachineJob{}, nil
	}
	if err != nil {
		return cache.MachineJob{}, err
	}
	m := cache.MachineJob{Live: machineRuns(inst.Status), Repository: inst.Repository}
	if inst.ActiveJobID != 0 {
		j, err := l.st.GetJob(ctx, runner.JobKey(inst.ActiveJobID, inst.ActiveRunAttempt))
		switch {
		case err == nil:
			m.Repository, m.Active = j.Repository, true
		case !errors.Is(err, store.ErrJobNotFound):
			return cache.MachineJob{}, err
		}
	}
	return m, nil
}

// machineRuns: the statuses in which a machine may be running a job. A
// machine on its way out gets no new token.
func machineRuns(s runner.Status) bool {
	return s == runner.StatusCreating || s == runner.StatusRunning || s == runner.StatusUnknown
}
