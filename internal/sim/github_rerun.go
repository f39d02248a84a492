package sim

import (
	"context"
	"fmt"

	"github.com/runfleet/runfleet/internal/github"
)

// RerunJob is GitHub's "re-run a job from a workflow run": the job's run
// gets a new attempt — a new job, with a new id and the next run_attempt,
// queued, whose webhooks go out like any job's — unless an attempt of the
// run is still queued, waiting or running, which GitHub refuses (403).
// With GitHub's faults: 5xx before or after the effect, 429, and a call
// cut off by the process's death that may still have taken effect.
func (a *githubAPI) RerunJob(ctx context.Context, ref github.JobRef) error {
	g := a.g
	fault, err := a.call(ctx, "rerun_job", ref.ID)
	if err != nil {
		return a.died(err, func() { _ = g.rerun(ref.ID) })
	}
	if err := a.refuse("rerun_job", fault); err != nil {
		return err
	}
	if err := g.rerun(ref.ID); err != nil {
		return err
	}
	return a.afterEffect("rerun_job", fault)
}

// rerun makes the new attempt of job id's run, or says why not.
func (g *githubWorld) rerun(id int64) error {
	w := g.w
	j := g.jobByID[id]
	if j == nil {
		w.tr.add("github rerun_job %d -> 404", id)
		return fmt.Errorf("github: job %d: %w", id, github.ErrJobNotFound)
	}
	attempt := int64(0)
	for _, other := range g.jobs {
		if other.RunID != j.RunID {
			continue
		}
		if other.Status != jobCompleted {
			w.stats.inc("github.rerun_refused_run_going")
			w.tr.add("github rerun_job %d -> 403: job %d of run %d is %s", id, other.ID, j.RunID, other.Status)
			return fmt.Errorf("github: re-run job %d: %w: an attempt of run %d is still %s", id, github.ErrRerunRefused, j.RunID, other.Status)
		}
		attempt = max(attempt, other.RunAttempt)
	}
	g.lastJobID++
	next := &ghJob{ID: g.lastJobID, RunID: j.RunID, RunAttempt: attempt + 1, Repo: j.Repo, Org: j.Org, Labels: append([]string(nil), j.Labels...), Pool: j.Pool, rerunOf: j}
	j.rerunsAccepted++
	w.stats.inc("github.reruns_accepted")
	if j.ss != nil {
		// A scale set's job is re-run into its scale set: GitHub assigns
		// the new attempt to it under a runner request of its own.
		w.actions.newScaleSetJob(next)
	}
	w.tr.add("github rerun_job %d (attempt %d) -> 201: job %d, attempt %d of run %d", id, j.RunAttempt, next.ID, next.RunAttempt, j.RunID)
	g.queueJob(next)
	return nil
}

// RunJobs lists a workflow run's jobs of every attempt.
func (a *githubAPI) RunJobs(ctx context.Context, ref github.RunRef) ([]github.Job, error) {
	g := a.g
	fault, err := a.call(ctx, "run_jobs", 0)
	if err != nil {
		return nil, err
	}
	if err := a.refuse("run_jobs", fault); err != nil {
		return nil, err
	}
	var jobs []github.Job
	for _, j := range g.jobs {
		if j.RunID != ref.ID {
			continue
		}
		job := github.Job{ID: j.ID, RunAttempt: j.RunAttempt, Status: j.Status, Conclusion: j.Conclusion}
		if j.runner != nil {
			job.RunnerName = j.runner.Name
		}
		jobs = append(jobs, job)
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("github: run %d: %w", ref.ID, github.ErrJobNotFound)
	}
	g.w.tr.add("github run_jobs %d -> %d jobs, latest attempt %d", ref.ID, len(jobs), github.LatestAttempt(jobs))
	return jobs, nil
}
