package scalesettest

import (
	"net/http"
	"strings"
)

// routes maps the protocol's endpoints (docs/scale-sets.md) to handlers.
func (s *Server) routes() http.Handler {
	const ss = "/service/_apis/runtime/runnerscalesets"
	const agents = "/service/_apis/distributedtask/pools/0/agents"
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/actions/runner-registration", s.handle(OpRegister, false, s.register))

	mux.HandleFunc("GET /service/_apis/runtime/runnergroups/", s.handle(OpGetRunnerGroup, true, s.admin(s.getRunnerGroups)))
	mux.HandleFunc("GET "+ss, s.handle(OpGetScaleSet, true, s.admin(s.listScaleSets)))
	mux.HandleFunc("POST "+ss, s.handle(OpCreateScaleSet, true, s.admin(s.createScaleSet)))
	mux.HandleFunc("GET "+ss+"/{id}", s.handle(OpGetScaleSet, true, s.admin(s.getScaleSet)))
	mux.HandleFunc("PATCH "+ss+"/{id}", s.handle(OpUpdateScaleSet, true, s.admin(s.updateScaleSet)))
	mux.HandleFunc("DELETE "+ss+"/{id}", s.handle(OpDeleteScaleSet, true, s.admin(s.deleteScaleSet)))

	mux.HandleFunc("POST "+ss+"/{id}/sessions", s.handle(OpCreateSession, true, s.admin(s.createSession)))
	mux.HandleFunc("PATCH "+ss+"/{id}/sessions/{sid}", s.handle(OpRefreshSession, true, s.admin(s.refreshSession)))
	mux.HandleFunc("DELETE "+ss+"/{id}/sessions/{sid}", s.handle(OpDeleteSession, true, s.admin(s.deleteSession)))
	mux.HandleFunc("POST "+ss+"/{id}/acquirejobs", s.handle(OpAcquireJobs, true, s.acquireJobs))
	mux.HandleFunc("POST "+ss+"/{id}/generatejitconfig", s.handle(OpGenerateJIT, true, s.admin(s.generateJIT)))

	mux.HandleFunc("GET "+agents, s.handle(OpGetRunner, true, s.admin(s.listRunners)))
	mux.HandleFunc("GET "+agents+"/{id}", s.handle(OpGetRunner, true, s.admin(s.getRunner)))
	mux.HandleFunc("DELETE "+agents+"/{id}", s.handle(OpRemoveRunner, true, s.admin(s.removeRunner)))

	mux.HandleFunc("GET /broker/message", s.handle(OpGetMessage, false, s.getMessage))
	mux.HandleFunc("DELETE /broker/message/{mid}", s.handle(OpDeleteMessage, false, s.deleteMessage))
	return mux
}

// bearer is the token of an "Authorization: Bearer" header, or "".
func bearer(r *http.Request) string {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return tok
}

// admin lets a call through only with a live admin token.
func (s *Server) admin(fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		exp, ok := s.adminTokens[bearer(r)]
		ok = ok && s.nowLocked().Before(exp)
		s.mu.Unlock()
		if !ok {
			// guess: the service's exact 401 body is not documented.
			writeException(w, http.StatusUnauthorized, "VssUnauthorizedException", "the admin token is expired or invalid")
			return
		}
		fn(w, r)
	}
}

// queueSessionLocked finds the session a queue token belongs to, if the
// token is still good.
func (s *Server) queueSessionLocked(r *http.Request) *session {
	tok := bearer(r)
	if tok == "" {
		return nil
	}
	for _, ss := range s.sessions {
		if ss.queueToken == tok && !ss.tokenIssued.IsZero() && s.nowLocked().Sub(ss.tokenIssued) < s.opts.QueueTokenTTL {
			return ss
		}
	}
	return nil
}
