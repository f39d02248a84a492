package scalesettest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// openSessionLocked makes a session with a fresh queue token.
func (s *Server) openSessionLocked(setID int64, owner string) *session {
	now := s.nowLocked()
	ss := &session{
		id: s.newIDLocked("session"), owner: owner, setID: setID,
		queueToken: s.queueTokenLocked(), tokenIssued: now, lastActive: now,
	}
	s.sessions[ss.id] = ss
	return ss
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	limitBody(w, r)
	var b struct {
		OwnerName string `json:"ownerName"`
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		writeException(w, http.StatusBadRequest, "ArgumentException", "unreadable body")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.scaleSetLocked(w, r)
	if set == nil {
		return
	}
	if old := s.sessionOfLocked(set.id); old != nil {
		if s.liveLocked(old) {
			writeException(w, http.StatusConflict, "GitHub.Actions.Runtime.RunnerScaleSetSessionConflictException",
				fmt.Sprintf("The runner scale set %s already has an active session for owner %s.", set.name, old.owner))
			return
		}
		delete(s.sessions, old.id) // GitHub expired the stale session
	}
	writeJSON(w, http.StatusOK, s.wireSessionLocked(s.openSessionLocked(set.id, b.OwnerName)))
}

func (s *Server) refreshSession(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.scaleSetLocked(w, r)
	if set == nil {
		return
	}
	ss := s.sessions[r.PathValue("sid")]
	if ss == nil || ss.setID != set.id {
		writeException(w, http.StatusNotFound, "GitHub.Actions.Runtime.RunnerAdminException",
			"runner referenced a session ID that doesn't exist in redis")
		return
	}
	now := s.nowLocked()
	ss.queueToken, ss.tokenIssued, ss.lastActive = s.queueTokenLocked(), now, now
	writeJSON(w, http.StatusOK, s.wireSessionLocked(ss))
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.scaleSetLocked(w, r)
	if set == nil {
		return
	}
	ss := s.sessions[r.PathValue("sid")]
	switch {
	case ss == nil || ss.setID != set.id:
		w.WriteHeader(http.StatusNotFound) // guess: no body
	case !s.liveLocked(ss):
		delete(s.sessions, ss.id)
		// guess: the status of RunnerScaleSetSessionExpiredException is
		// reported as 400.
		writeException(w, http.StatusBadRequest, "GitHub.Actions.Runtime.RunnerScaleSetSessionExpiredException",
			"The message session has expired.")
	default:
		delete(s.sessions, ss.id)
		s.notifyLocked()
		w.WriteHeader(http.StatusNoContent)
	}
}
