package simulated

import "github.com/runfleet/runfleet/internal/github"

// SetJob sets what GetJob reports for a job: status (github.JobQueued,
// JobInProgress, JobCompleted, JobWaiting…), conclusion (for completed
// jobs) and the runner that took it ("" while queued). Runners are left as
// they are: play their side with SetBusy and Deregister, or use StartJob
// and FinishJob, which move both. A deleted job is known again.
func (g *GitHub) SetJob(id int64, status, conclusion, runnerName string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setJobLocked(id, status, conclusion, runnerName)
}

func (g *GitHub) setJobLocked(id int64, status, conclusion, runnerName string) {
	delete(g.jobs.gone, id)
	g.jobs.byID[id] = github.Job{ID: id, RunAttempt: 1, Status: status, Conclusion: conclusion, RunnerName: runnerName}
}

// DeleteJob makes GitHub forget a job (its run or repository was deleted):
// GetJob then returns github.ErrJobNotFound, until SetJob.
func (g *GitHub) DeleteJob(id int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.jobs.byID, id)
	g.jobs.gone[id] = true
}

// StartJob plays a runner picking a job up: the job goes in_progress on
// runnerName, and every runner of that name becomes online and busy. It
// reports whether any runner has the name; the job moves either way (a
// runner of another controller may have taken it).
func (g *GitHub) StartJob(id int64, runnerName string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setJobLocked(id, github.JobInProgress, "", runnerName)
	named := g.runners.named(runnerName)
	for _, r := range named {
		r.Status, r.Busy = StatusOnline, true
	}
	return len(named) > 0
}

// FinishJob plays a job ending, whether or not its completed webhook is
// ever delivered: the job completes with conclusion, and the runner that
// ran it — a JIT runner, which runs one job — deregisters itself. It
// reports whether that runner was still registered.
func (g *GitHub) FinishJob(id int64, conclusion string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	runnerName := g.jobs.byID[id].RunnerName
	g.setJobLocked(id, github.JobCompleted, conclusion, runnerName)
	return runnerName != "" && g.deregisterLocked(runnerName)
}
