package githubtest

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// rerunRefusedMessage is the fake's 403 text for a run that has an
// attempt still going: GitHub refuses to start another one then.
const rerunRefusedMessage = "This workflow run cannot be re-run: an attempt of it is still running"

// handleRerunJob does what GitHub does: the job's workflow run gets a new
// attempt, in which the job is queued again under a new job id (GitHub
// never reuses a job id across attempts). A run with a job not yet
// completed — the job itself, or an attempt made by an earlier re-run —
// is refused with 403, which is what makes a repeated re-run harmless
// while the first one is still going.
func (s *Server) handleRerunJob(req *request) reply {
	id, err := strconv.ParseInt(req.params["job_id"], 10, 64)
	j, ok := s.jobs[id]
	repo := req.params["owner"] + "/" + req.params["repo"]
	if err != nil || !ok || !strings.EqualFold(j.Repo, repo) {
		return errorReply(http.StatusNotFound, "Not Found", req.route.docs)
	}
	if inst := req.who.installation; inst != nil && inst.account != "" && !strings.EqualFold(inst.account, req.params["owner"]) {
		return errorReply(http.StatusForbidden, "Resource not accessible by integration", req.route.docs)
	}
	latest := int64(0)
	for _, other := range s.jobs {
		if other.RunID != j.RunID {
			continue
		}
		if other.Status != JobCompleted {
			return errorReply(http.StatusForbidden, rerunRefusedMessage, req.route.docs)
		}
		latest = max(latest, other.RunAttempt)
	}
	next := j.clone()
	next.ID = s.newJobID()
	next.RunAttempt = latest + 1
	next.Status, next.Conclusion = JobQueued, ""
	next.RunnerID, next.RunnerName, next.RunnerGroupID, next.RunnerGroupName = 0, "", 0, ""
	now := s.now().UTC().Truncate(time.Second)
	next.CreatedAt, next.StartedAt, next.CompletedAt = now, now, time.Time{}
	s.jobs[next.ID] = &next
	return jsonReply(http.StatusCreated, struct{}{})
}

// newJobID is an id no job of the fake has: one past the largest.
func (s *Server) newJobID() int64 {
	var top int64
	for id := range s.jobs {
		top = max(top, id)
	}
	return top + 1
}

// RunJobs returns the jobs of a workflow run, every attempt, by attempt
// then id: a test reads a re-run's new job (its id, to deliver its queued
// webhook with WorkflowJobWebhook) here.
func (s *Server) RunJobs(runID int64) []Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Job
	for _, j := range s.jobs {
		if j.RunID == runID {
			out = append(out, j.clone())
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].RunAttempt != out[b].RunAttempt {
			return out[a].RunAttempt < out[b].RunAttempt
		}
		return out[a].ID < out[b].ID
	})
	return out
}
