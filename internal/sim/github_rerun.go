package sim

import (
	"context"

	"github.com/runfleet/runfleet/internal/github"
)

// RerunJob is accepted and counted: the simulated world interrupts no
// machine, so any re-run it sees is a re-run runfleet should not have
// asked for, and the count (github.calls.rerun_job) makes that visible.
func (a *githubAPI) RerunJob(ctx context.Context, ref github.JobRef) error {
	fault, err := a.call(ctx, "rerun_job", ref.ID)
	if err != nil {
		return err
	}
	if err := a.refuse("rerun_job", fault); err != nil {
		return err
	}
	a.g.w.tr.add("github rerun_job %d -> 201", ref.ID)
	return nil
}
