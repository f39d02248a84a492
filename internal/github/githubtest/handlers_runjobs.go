package githubtest

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// handleListRunJobs lists a workflow run's jobs: those of its latest
// attempt (filter=latest, GitHub's default) or of every attempt
// (filter=all), by attempt then id. An unknown run is a 404.
func (s *Server) handleListRunJobs(req *request) reply {
	runID, err := strconv.ParseInt(req.params["run_id"], 10, 64)
	repo := req.params["owner"] + "/" + req.params["repo"]
	if err != nil {
		return errorReply(http.StatusNotFound, "Not Found", req.route.docs)
	}
	if inst := req.who.installation; inst != nil && inst.account != "" && !strings.EqualFold(inst.account, req.params["owner"]) {
		return errorReply(http.StatusForbidden, "Resource not accessible by integration", req.route.docs)
	}
	var jobs []*Job
	latest := int64(0)
	for _, j := range s.jobs {
		if j.RunID == runID && strings.EqualFold(j.Repo, repo) {
			jobs = append(jobs, j)
			latest = max(latest, j.RunAttempt)
		}
	}
	if len(jobs) == 0 {
		return errorReply(http.StatusNotFound, "Not Found", req.route.docs)
	}
	if req.query.Get("filter") != "all" {
		kept := jobs[:0]
		for _, j := range jobs {
			if j.RunAttempt == latest {
				kept = append(kept, j)
			}
		}
		jobs = kept
	}
	sort.Slice(jobs, func(a, b int) bool {
		if jobs[a].RunAttempt != jobs[b].RunAttempt {
			return jobs[a].RunAttempt < jobs[b].RunAttempt
		}
		return jobs[a].ID < jobs[b].ID
	})
	out := struct {
		TotalCount int       `json:"total_count"`
		Jobs       []jobJSON `json:"jobs"`
	}{TotalCount: len(jobs), Jobs: make([]jobJSON, 0, len(jobs))}
	for _, j := range jobs {
		out.Jobs = append(out.Jobs, s.jobJSON(req, j))
	}
	return jsonReply(http.StatusOK, out)
}
