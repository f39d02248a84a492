package githubtest

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// runnerGroupJSON covers GitHub's "runner-groups-org" and
// "runner-groups-enterprise"; inherited is only in the organization form.
type runnerGroupJSON struct {
	ID                       int64    `json:"id"`
	Name                     string   `json:"name"`
	Visibility               string   `json:"visibility"`
	Default                  bool     `json:"default"`
	RunnersURL               string   `json:"runners_url"`
	HostedRunnersURL         string   `json:"hosted_runners_url"`
	Inherited                *bool    `json:"inherited,omitempty"`
	AllowsPublicRepositories bool     `json:"allows_public_repositories"`
	RestrictedToWorkflows    bool     `json:"restricted_to_workflows"`
	SelectedWorkflows        []string `json:"selected_workflows"`
	WorkflowRestrictionsRO   bool     `json:"workflow_restrictions_read_only"`
}

type runnerGroupListJSON struct {
	TotalCount int               `json:"total_count"`
	Groups     []runnerGroupJSON `json:"runner_groups"`
}

// handleListRunnerGroups lists an organization's or enterprise's runner
// groups, paginated, default group first.
func (s *Server) handleListRunnerGroups(req *request) reply {
	o := s.owner(req)
	groups := s.runnerGroupsSorted(o)
	p := paginate(req.query, len(groups))
	from, to := p.bounds(len(groups))
	path, _ := stripPrefix(req.http.URL.Path)
	body := runnerGroupListJSON{TotalCount: len(groups), Groups: make([]runnerGroupJSON, 0, to-from)}
	for _, g := range groups[from:to] {
		item := runnerGroupJSON{
			ID: g.ID, Name: g.Name, Visibility: "all", Default: g.Default,
			RunnersURL:        fmt.Sprintf("%s%s/%d/runners", req.apiBase, path, g.ID),
			HostedRunnersURL:  fmt.Sprintf("%s%s/%d/hosted-runners", req.apiBase, path, g.ID),
			SelectedWorkflows: []string{},
		}
		if o.kind == kindOrg {
			inherited := false
			item.Inherited = &inherited
		}
		body.Groups = append(body.Groups, item)
	}
	rep := jsonReply(http.StatusOK, body)
	rep.header = p.linkHeader(req)
	return rep
}

func (s *Server) runnerGroupsSorted(o *owner) []RunnerGroup {
	out := append([]RunnerGroup(nil), o.groups...)
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// jobJSON is GitHub's "job". Pointers are the nullable fields.
type jobJSON struct {
	ID              int64    `json:"id"`
	RunID           int64    `json:"run_id"`
	RunURL          string   `json:"run_url"`
	RunAttempt      int64    `json:"run_attempt"`
	NodeID          string   `json:"node_id"`
	HeadSHA         string   `json:"head_sha"`
	URL             string   `json:"url"`
	HTMLURL         *string  `json:"html_url"`
	Status          string   `json:"status"`
	Conclusion      *string  `json:"conclusion"`
	CreatedAt       string   `json:"created_at"`
	StartedAt       string   `json:"started_at"`
	CompletedAt     *string  `json:"completed_at"`
	Name            string   `json:"name"`
	Steps           []any    `json:"steps"`
	CheckRunURL     string   `json:"check_run_url"`
	Labels          []string `json:"labels"`
	RunnerID        *int64   `json:"runner_id"`
	RunnerName      *string  `json:"runner_name"`
	RunnerGroupID   *int64   `json:"runner_group_id"`
	RunnerGroupName *string  `json:"runner_group_name"`
	WorkflowName    *string  `json:"workflow_name"`
	HeadBranch      *string  `json:"head_branch"`
}

// handleGetJob returns a workflow job of the repository in the path.
func (s *Server) handleGetJob(req *request) reply {
	id, err := strconv.ParseInt(req.params["job_id"], 10, 64)
	j, ok := s.jobs[id]
	repo := req.params["owner"] + "/" + req.params["repo"]
	if err != nil || !ok || !strings.EqualFold(j.Repo, repo) {
		return errorReply(http.StatusNotFound, "Not Found", req.route.docs)
	}
	if inst := req.who.installation; inst != nil && inst.account != "" && !strings.EqualFold(inst.account, req.params["owner"]) {
		return errorReply(http.StatusForbidden, "Resource not accessible by integration", req.route.docs)
	}
	return jsonReply(http.StatusOK, s.jobJSON(req, j))
}

func (s *Server) jobJSON(req *request, j *Job) jobJSON {
	repoAPI := req.apiBase + "/repos/" + j.Repo
	html := fmt.Sprintf("https://github.com/%s/actions/runs/%d/job/%d", j.Repo, j.RunID, j.ID)
	labels := append([]string{}, j.Labels...)
	out := jobJSON{
		ID: j.ID, RunID: j.RunID, RunAttempt: j.RunAttempt,
		RunURL:       fmt.Sprintf("%s/actions/runs/%d", repoAPI, j.RunID),
		NodeID:       "CR_" + strconv.FormatInt(j.ID, 36),
		HeadSHA:      j.HeadSHA,
		URL:          fmt.Sprintf("%s/actions/jobs/%d", repoAPI, j.ID),
		HTMLURL:      &html,
		Status:       j.Status,
		Conclusion:   optString(j.Conclusion),
		CreatedAt:    j.CreatedAt.UTC().Format(time.RFC3339),
		StartedAt:    j.StartedAt.UTC().Format(time.RFC3339),
		Name:         j.Name,
		Steps:        []any{},
		CheckRunURL:  fmt.Sprintf("%s/check-runs/%d", repoAPI, j.ID),
		Labels:       labels,
		WorkflowName: optString(j.WorkflowName),
		HeadBranch:   optString(j.HeadBranch),
	}
	if !j.CompletedAt.IsZero() {
		done := j.CompletedAt.UTC().Format(time.RFC3339)
		out.CompletedAt = &done
	}
	if j.RunnerName != "" {
		// Copies: the body is encoded after this returns.
		id, name, groupID, group := j.RunnerID, j.RunnerName, j.RunnerGroupID, j.RunnerGroupName
		out.RunnerID, out.RunnerName, out.RunnerGroupID, out.RunnerGroupName = &id, &name, &groupID, &group
	}
	return out
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
