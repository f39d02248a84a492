package simulated

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/runfleet/runfleet/internal/github"
)

// OpRerunJob counts RerunJob calls.
const OpRerunJob Op = "RerunJob"

// RerunJob records a re-run of the job, as GitHub's re-run job endpoint
// would start one. Like GitHub it refuses (github.ErrRerunRefused) while
// the job is not completed or an earlier re-run of it is still going —
// the simulation has no runs, so "still going" is: re-run before and the
// job not completed again since (MarkRerunDone). Reruns counts the
// accepted ones.
func (g *GitHub) RerunJob(ctx context.Context, ref github.JobRef) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	inj, err := g.beginLocked(OpRerunJob)
	if err != nil {
		return err
	}
	if inj != nil && !inj.afterEffect {
		return inj.err
	}
	if ref.Owner.Org == "" && ref.Owner.Enterprise == "" {
		return errNoOwner
	}
	if ref.ID <= 0 || g.jobs.gone[ref.ID] {
		return fmt.Errorf("%w: simulated 404: job %d in %s", github.ErrJobNotFound, ref.ID, ref.Repository)
	}
	if job, ok := g.jobs.byID[ref.ID]; ok && job.Status != github.JobCompleted {
		return fmt.Errorf("%w: simulated 403: job %d is %s", github.ErrRerunRefused, ref.ID, job.Status)
	}
	if g.jobs.rerunning[ref.ID] {
		return fmt.Errorf("%w: simulated 403: job %d is being re-run already", github.ErrRerunRefused, ref.ID)
	}
	g.jobs.rerunning[ref.ID] = true
	g.jobs.reruns[ref.ID]++
	if ref.RunID != 0 {
		g.jobs.runReruns[ref.RunID]++
	}
	if inj != nil {
		return inj.err
	}
	return nil
}

// Reruns says how many re-runs of the job GitHub accepted.
func (g *GitHub) Reruns(jobID int64) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.jobs.reruns[jobID]
}

// MarkRerunDone plays the re-run's attempt finishing: the job may be
// re-run again.
func (g *GitHub) MarkRerunDone(jobID int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.jobs.rerunning, jobID)
}

// OpRunJobs counts RunJobs calls.
const OpRunJobs Op = "RunJobs"

// RunJobs lists what the simulation knows of a run. It has no runs, so
// these are every job tests told it of (SetJob, StartJob, FinishJob), at
// attempt 1, and — once GitHub accepted re-runs in the run — one job of
// the run's latest attempt, 1 plus those re-runs, queued.
func (g *GitHub) RunJobs(ctx context.Context, ref github.RunRef) ([]github.Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	inj, err := g.beginLocked(OpRunJobs)
	if err != nil {
		return nil, err
	}
	if inj != nil {
		return nil, inj.err
	}
	jobs := make([]github.Job, 0, len(g.jobs.byID)+1)
	for _, j := range g.jobs.byID {
		jobs = append(jobs, j)
	}
	slices.SortFunc(jobs, func(a, b github.Job) int { return cmp.Compare(a.ID, b.ID) })
	if n := g.jobs.runReruns[ref.ID]; n > 0 {
		jobs = append(jobs, github.Job{RunAttempt: 1 + n, Status: github.JobQueued})
	}
	return jobs, nil
}
