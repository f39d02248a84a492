package simulated

import (
	"context"
	"fmt"
	"strings"

	"github.com/runfleet/runfleet/internal/github"
)

// jobBook is what tests told the simulation about workflow jobs: their
// state, and which jobs GitHub no longer knows. Jobs are keyed by id alone:
// GitHub's job ids are unique across repositories.
type jobBook struct {
	byID map[int64]github.Job
	gone map[int64]bool
	// reruns counts accepted re-runs per job; rerunning holds the jobs
	// whose re-run has not finished (see RerunJob).
	reruns    map[int64]int
	rerunning map[int64]bool
	// runReruns counts the accepted re-runs per workflow run (JobRef.RunID):
	// a run's latest attempt is 1 + that.
	runReruns map[int64]int64
}

func newJobBook() jobBook {
	return jobBook{
		byID: make(map[int64]github.Job), gone: make(map[int64]bool),
		reruns: make(map[int64]int), rerunning: make(map[int64]bool), runReruns: make(map[int64]int64),
	}
}

// GetJob reports the job's state as tests set it (SetJob, StartJob,
// FinishJob). A job deleted with DeleteJob returns an error that is
// github.ErrJobNotFound.
//
// The simulation sees no real workflows, so a job it was never told about
// is reported queued (attempt 1, no runner): the engine asks only about
// demand whose instance failed, and "still queued" keeps that demand open
// for another instance — the safe answer — where anything else would close
// it on a guess.
func (g *GitHub) GetJob(ctx context.Context, ref github.JobRef) (*github.Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	inj, err := g.beginLocked(OpGetJob)
	if err != nil {
		return nil, err
	}
	if inj != nil {
		return nil, inj.err // a read has no effect to take first
	}
	if ref.Owner.Org == "" && ref.Owner.Enterprise == "" {
		return nil, errNoOwner
	}
	if org, repo, ok := strings.Cut(ref.Repository, "/"); !ok || org == "" || repo == "" || strings.Contains(repo, "/") {
		return nil, fmt.Errorf("simulated 404: repository %q is not \"org/repo\"", ref.Repository)
	}
	if ref.ID <= 0 {
		return nil, fmt.Errorf("simulated 404: job id %d", ref.ID)
	}
	if g.jobs.gone[ref.ID] {
		return nil, fmt.Errorf("%w: simulated 404: job %d in %s", github.ErrJobNotFound, ref.ID, ref.Repository)
	}
	job, ok := g.jobs.byID[ref.ID]
	if !ok {
		job = github.Job{ID: ref.ID, RunAttempt: 1, Status: github.JobQueued}
	}
	return &job, nil
}
