package githubtest

import (
	"net/http"
	"strconv"
)

// runnerLabelJSON is GitHub's "runner-label".
type runnerLabelJSON struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
}

// runnerJSON is GitHub's "runner".
type runnerJSON struct {
	ID            int64             `json:"id"`
	RunnerGroupID int64             `json:"runner_group_id"`
	Name          string            `json:"name"`
	OS            string            `json:"os"`
	Status        string            `json:"status"`
	Busy          bool              `json:"busy"`
	Ephemeral     bool              `json:"ephemeral"`
	Labels        []runnerLabelJSON `json:"labels"`
}

type runnerListJSON struct {
	TotalCount int          `json:"total_count"`
	Runners    []runnerJSON `json:"runners"`
}

func (s *Server) runnerJSON(r *Runner) runnerJSON {
	labels := make([]runnerLabelJSON, 0, len(r.Labels))
	for _, l := range r.Labels {
		labels = append(labels, runnerLabelJSON{ID: s.labelID(l), Name: l, Type: labelType(l)})
	}
	return runnerJSON{
		ID: r.ID, RunnerGroupID: r.GroupID, Name: r.Name, OS: r.OS, Status: r.Status,
		Busy: r.Busy, Ephemeral: r.Ephemeral, Labels: labels,
	}
}

// handleListRunners lists an owner's runners, paginated; the optional name
// query filters by exact name (newer than go-github v57, which cannot send it).
func (s *Server) handleListRunners(req *request) reply {
	o := s.owner(req)
	all := s.ownerRunners(o.key, req.query.Get("name"))
	p := paginate(req.query, len(all))
	from, to := p.bounds(len(all))
	body := runnerListJSON{TotalCount: len(all), Runners: make([]runnerJSON, 0, to-from)}
	for _, r := range all[from:to] {
		body.Runners = append(body.Runners, s.runnerJSON(r))
	}
	rep := jsonReply(http.StatusOK, body)
	rep.header = p.linkHeader(req)
	return rep
}

// pathRunner finds the runner the path's {runner_id} names at the owner.
func (s *Server) pathRunner(req *request) (*Runner, bool) {
	id, err := strconv.ParseInt(req.params["runner_id"], 10, 64)
	if err != nil {
		return nil, false
	}
	r, ok := s.runners[id]
	if !ok || r.Owner != s.owner(req).key {
		return nil, false
	}
	return r, true
}

func (s *Server) handleGetRunner(req *request) reply {
	r, ok := s.pathRunner(req)
	if !ok {
		return errorReply(http.StatusNotFound, "Not Found", req.route.docs)
	}
	return jsonReply(http.StatusOK, s.runnerJSON(r))
}

// handleDeleteRunner removes a runner: 204, 404 when unknown, 422 while it
// runs a job.
func (s *Server) handleDeleteRunner(req *request) reply {
	r, ok := s.pathRunner(req)
	if !ok {
		return errorReply(http.StatusNotFound, "Not Found", req.route.docs)
	}
	if r.Busy {
		return busyReply(busyMessage(r.Name), req.route.docs)
	}
	s.deleteRunner(r)
	return reply{status: http.StatusNoContent}
}

// validationErrorJSON is GitHub's "validation-error-simple".
type validationErrorJSON struct {
	Message          string   `json:"message"`
	DocumentationURL string   `json:"documentation_url"`
	Errors           []string `json:"errors,omitempty"`
	Status           string   `json:"status,omitempty"`
}

func validationReply(message, docs string) reply {
	return jsonReply(http.StatusUnprocessableEntity, validationErrorJSON{
		Message: message, DocumentationURL: docs, Status: strconv.Itoa(http.StatusUnprocessableEntity),
	})
}

func busyMessage(name string) string {
	return "Runner " + strconv.Quote(name) + " is still running a job"
}

func busyReply(message, docs string) reply { return validationReply(message, docs) }
