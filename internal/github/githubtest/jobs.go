package githubtest

import (
	"slices"
	"strings"
	"time"
)

// Workflow job statuses the fake moves a job through.
const (
	JobQueued     = "queued"
	JobInProgress = "in_progress"
	JobCompleted  = "completed"
	JobWaiting    = "waiting"
)

// Job is a workflow job as GET /repos/{owner}/{repo}/actions/jobs/{job_id}
// returns it.
type Job struct {
	ID         int64
	RunID      int64
	RunAttempt int64
	// Repo is "owner/repo".
	Repo         string
	Name         string
	WorkflowName string
	HeadBranch   string
	HeadSHA      string
	Status       string // JobQueued when empty
	Conclusion   string // "" while the job has none (null)
	Labels       []string
	// Runner fields are zero (null in JSON) until a runner takes the job.
	RunnerID        int64
	RunnerName      string
	RunnerGroupID   int64
	RunnerGroupName string
	CreatedAt       time.Time
	StartedAt       time.Time
	CompletedAt     time.Time
}

func (j *Job) clone() Job {
	c := *j
	c.Labels = slices.Clone(j.Labels)
	return c
}

// AddJob records a workflow job. Missing fields get plausible values: run id
// and attempt, name, status queued, created/started now.
func (s *Server) AddJob(j Job) Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j.ID <= 0 || !strings.Contains(j.Repo, "/") {
		s.t.Errorf("githubtest: AddJob: want a positive ID and Repo \"owner/repo\", got %d %q", j.ID, j.Repo)
		return Job{}
	}
	now := s.now().UTC().Truncate(time.Second)
	if j.RunID == 0 {
		j.RunID = j.ID * 10
	}
	if j.RunAttempt == 0 {
		j.RunAttempt = 1
	}
	if j.Name == "" {
		j.Name = "build"
	}
	if j.WorkflowName == "" {
		j.WorkflowName = "CI"
	}
	if j.HeadBranch == "" {
		j.HeadBranch = "main"
	}
	if j.HeadSHA == "" {
		j.HeadSHA = "009b8a3a9ccbb128af87f9b1c0f4c62e8a304f6d"
	}
	if j.Status == "" {
		j.Status = JobQueued
	}
	if j.CreatedAt.IsZero() {
		j.CreatedAt = now
	}
	if j.StartedAt.IsZero() {
		// GitHub sets started_at when the job is queued, too.
		j.StartedAt = j.CreatedAt
	}
	stored := j.clone()
	s.jobs[j.ID] = &stored
	return stored.clone()
}

// StartJob assigns a queued job to a runner, as GitHub does when the runner
// picks it up: the job goes in_progress with the runner's fields and the
// runner becomes online and busy. It reports whether both exist.
func (s *Server) StartJob(jobID int64, runnerName string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[jobID]
	r := s.runnerNamed(runnerName)
	if !ok || r == nil {
		return false
	}
	j.Status = JobInProgress
	j.RunnerID, j.RunnerName, j.RunnerGroupID, j.RunnerGroupName = r.ID, r.Name, r.GroupID, s.groupNameOf(r)
	j.StartedAt = s.now().UTC().Truncate(time.Second)
	r.Status, r.Busy, r.JobID = StatusOnline, true, jobID
	return true
}

// FinishJob completes a job with conclusion (e.g. "success", "failure",
// "cancelled"). The runner running it, if any, goes idle, and removes itself
// if it is ephemeral. It reports whether the job exists.
func (s *Server) FinishJob(jobID int64, conclusion string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[jobID]
	if !ok {
		return false
	}
	s.completeJob(j, conclusion)
	for _, r := range s.runners {
		if r.JobID == jobID {
			s.releaseRunner(r)
		}
	}
	return true
}

func (s *Server) completeJob(j *Job, conclusion string) {
	j.Status = JobCompleted
	j.Conclusion = conclusion
	j.CompletedAt = s.now().UTC().Truncate(time.Second)
}

// SetJob puts a job straight into a state, as GitHub would report it
// whatever happened in between: status (JobQueued, JobInProgress,
// JobCompleted, JobWaiting…), conclusion (completed jobs only) and the
// runner that took it ("" while queued or waiting). Unlike StartJob the
// runner need not be registered here — a JIT runner removes itself after its
// job, and a job may have gone to a runner another controller registered —
// and no runner's state changes: play that side with SetBusy, FinishRunner
// or a remove. It reports whether the job exists (see AddJob).
func (s *Server) SetJob(jobID int64, status, conclusion, runnerName string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[jobID]
	if !ok {
		return false
	}
	if conclusion != "" && status != JobCompleted {
		s.t.Errorf("githubtest: SetJob(%d): GitHub gives only completed jobs a conclusion, got %q while %s", jobID, conclusion, status)
	}
	now := s.now().UTC().Truncate(time.Second)
	if status == JobInProgress && j.Status != JobInProgress {
		j.StartedAt = now
	}
	j.Status, j.Conclusion, j.CompletedAt = status, conclusion, time.Time{}
	if status == JobCompleted {
		j.CompletedAt = now
	}
	switch r := s.runnerNamed(runnerName); {
	case runnerName == "":
		j.RunnerID, j.RunnerName, j.RunnerGroupID, j.RunnerGroupName = 0, "", 0, ""
	case r != nil:
		j.RunnerID, j.RunnerName, j.RunnerGroupID, j.RunnerGroupName = r.ID, r.Name, r.GroupID, s.groupNameOf(r)
	case !strings.EqualFold(j.RunnerName, runnerName):
		// A runner that is gone kept its id on the job: make one up.
		j.RunnerID, j.RunnerName = s.newRunnerID(), runnerName
		j.RunnerGroupID, j.RunnerGroupName = DefaultRunnerGroupID, DefaultRunnerGroupName
	}
	return true
}

// groupNameOf names the runner group a registered runner is in.
func (s *Server) groupNameOf(r *Runner) string {
	if o, ok := s.owners[ownerIndex(r.Owner)]; ok {
		if g, ok := o.group(r.GroupID); ok {
			return g.Name
		}
	}
	return DefaultRunnerGroupName
}
