package scalesettest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	limitBody(w, r)
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "RemoteAuth ")
	var body struct {
		URL         string `json:"url"`
		RunnerEvent string `json:"runner_event"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.RunnerEvent != "register" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "want {url, runner_event: register}"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, known := s.regTokens[tok]
	own := ok && known && s.nowLocked().Before(exp)
	if !own && !(ok && s.opts.ExternalToken != nil && s.opts.ExternalToken(tok)) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	web := s.URL()
	if s.opts.WebURL != "" {
		web = s.opts.WebURL
	}
	if want := web + "/" + ownerPath(s.opts.Owner.Org, s.opts.Owner.Repo, s.opts.Owner.Enterprise); body.URL != want {
		// guess: how GitHub refuses a URL that is not the token's owner.
		writeJSON(w, http.StatusNotFound, map[string]string{"message": fmt.Sprintf("unknown url %q (want %q)", body.URL, want)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"url": s.ServiceURL(), "token": s.adminJWTLocked()})
}

func ownerPath(org, repo, enterprise string) string {
	switch {
	case enterprise != "":
		return "enterprises/" + enterprise
	case repo != "":
		return org + "/" + repo
	}
	return org
}

func (s *Server) getRunnerGroups(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("groupName")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, g := range s.groups {
		if name == "" || strings.EqualFold(g.name, name) {
			out = append(out, map[string]any{"id": g.id, "name": g.name, "size": 0, "isDefaultGroup": g.isDefault})
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "value": out})
}

func (s *Server) listScaleSets(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, ss := range s.sets {
		if (q.Get("name") == "" || ss.name == q.Get("name")) && (q.Get("runnerGroupId") == "" || q.Get("runnerGroupId") == fmt.Sprint(ss.groupID)) {
			out = append(out, s.wireScaleSetLocked(ss))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "value": out})
}

// scaleSetLocked finds the path's scale set or answers 404.
func (s *Server) scaleSetLocked(w http.ResponseWriter, r *http.Request) *scaleSet {
	id, _ := pathID(r, "id")
	ss := s.sets[id]
	if ss == nil {
		writeException(w, http.StatusNotFound, "GitHub.Actions.Runtime.RunnerScaleSetNotFoundException",
			fmt.Sprintf("The runner scale set %d does not exist.", id))
	}
	return ss
}

func (s *Server) getScaleSet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.scaleSetLocked(w, r); ss != nil {
		writeJSON(w, http.StatusOK, s.wireScaleSetLocked(ss))
	}
}

type scaleSetBody struct {
	Name          string  `json:"name"`
	RunnerGroupID int64   `json:"runnerGroupId"`
	Labels        []label `json:"labels"`
	RunnerSetting *struct {
		DisableUpdate bool `json:"disableUpdate"`
	} `json:"RunnerSetting"`
}

func (s *Server) createScaleSet(w http.ResponseWriter, r *http.Request) {
	limitBody(w, r)
	var b scaleSetBody
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b.Name == "" {
		writeException(w, http.StatusBadRequest, "ArgumentException", "a scale set needs a name")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.groups[b.RunnerGroupID] == nil {
		writeException(w, http.StatusBadRequest, "ArgumentException", "unknown runner group") // guess
		return
	}
	for _, ss := range s.sets {
		if ss.groupID == b.RunnerGroupID && ss.name == b.Name {
			writeException(w, http.StatusConflict, "RunnerScaleSetExistsException", "name taken in the group") // guess
			return
		}
	}
	ss := &scaleSet{id: s.nextLocked(), groupID: b.RunnerGroupID, name: b.Name, labels: b.Labels, created: s.nowLocked()}
	if b.RunnerSetting != nil {
		ss.disableUpdate = b.RunnerSetting.DisableUpdate
	}
	s.sets[ss.id] = ss
	writeJSON(w, http.StatusOK, s.wireScaleSetLocked(ss))
}

func (s *Server) updateScaleSet(w http.ResponseWriter, r *http.Request) {
	limitBody(w, r)
	var b scaleSetBody
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		writeException(w, http.StatusBadRequest, "ArgumentException", "unreadable body")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.scaleSetLocked(w, r)
	if ss == nil {
		return
	}
	if b.Name != "" {
		ss.name = b.Name
	}
	if b.RunnerGroupID != 0 {
		ss.groupID = b.RunnerGroupID
	}
	if b.Labels != nil {
		ss.labels = b.Labels
	}
	if b.RunnerSetting != nil {
		ss.disableUpdate = b.RunnerSetting.DisableUpdate
	}
	writeJSON(w, http.StatusOK, s.wireScaleSetLocked(ss))
}

func (s *Server) deleteScaleSet(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.scaleSetLocked(w, r); ss != nil {
		s.deleteScaleSetLocked(ss.id)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) generateJIT(w http.ResponseWriter, r *http.Request) {
	limitBody(w, r)
	var b struct {
		Name       string `json:"name"`
		WorkFolder string `json:"workFolder"`
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b.Name == "" {
		writeException(w, http.StatusBadRequest, "ArgumentException", "a runner needs a name")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.scaleSetLocked(w, r)
	if ss == nil {
		return
	}
	for _, rr := range s.runners {
		if rr.name == b.Name {
			// guess: the status GitHub pairs with AgentExistsException.
			writeException(w, http.StatusConflict, "GitHub.DistributedTask.WebApi.AgentExistsException",
				fmt.Sprintf("Agent with name %s already exists.", b.Name))
			return
		}
	}
	rr := &runnerRecord{id: s.nextLocked(), name: b.Name, setID: ss.id}
	s.runners[rr.id] = rr
	writeJSON(w, http.StatusOK, map[string]any{
		"runner":           wireRunner(rr),
		"encodedJITConfig": s.encodedJITConfigLocked(rr, b.WorkFolder),
	})
}

func wireRunner(rr *runnerRecord) map[string]any {
	return map[string]any{"id": rr.id, "name": rr.name, "runnerScaleSetId": rr.setID}
}

func (s *Server) listRunners(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("agentName")
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, rr := range s.runners {
		if name == "" || rr.name == name {
			out = append(out, wireRunner(rr))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"count": len(out), "value": out})
}

// runnerLocked finds the path's runner or answers 404.
func (s *Server) runnerLocked(w http.ResponseWriter, r *http.Request) *runnerRecord {
	id, _ := pathID(r, "id")
	rr := s.runners[id]
	if rr == nil {
		writeException(w, http.StatusNotFound, "GitHub.DistributedTask.WebApi.AgentNotFoundException",
			fmt.Sprintf("No agent found with identifier %d.", id))
	}
	return rr
}

func (s *Server) getRunner(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rr := s.runnerLocked(w, r); rr != nil {
		writeJSON(w, http.StatusOK, wireRunner(rr))
	}
}

func (s *Server) removeRunner(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rr := s.runnerLocked(w, r)
	switch {
	case rr == nil:
	case rr.busy:
		// guess: the status GitHub pairs with JobStillRunningException.
		writeException(w, http.StatusBadRequest, "GitHub.DistributedTask.WebApi.JobStillRunningException",
			fmt.Sprintf("Agent %s is running a job and cannot be removed.", rr.name))
	default:
		delete(s.runners, rr.id)
		w.WriteHeader(http.StatusNoContent)
	}
}
