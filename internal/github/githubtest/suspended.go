package githubtest

import (
	"net/http"
	"time"
)

// msgInstallationSuspended is what GitHub answers a token request for a
// suspended installation, and a call with a token it issued before.
const msgInstallationSuspended = "This installation has been suspended"

// SuspendInstallation suspends an installation, as its owner or GitHub
// can: the installation look-up still finds it (with suspended_at and
// suspended_by set, as GitHub's "installation" schema has them), but its
// token requests, and calls with tokens issued before, answer 403.
func (s *Server) SuspendInstallation(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if inst := s.installations[id]; inst != nil {
		inst.suspendedAt = s.now().UTC().Truncate(time.Second)
		return
	}
	s.t.Errorf("githubtest: SuspendInstallation(%d): no such installation", id)
}

// UnsuspendInstallation lifts a suspension.
func (s *Server) UnsuspendInstallation(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if inst := s.installations[id]; inst != nil {
		inst.suspendedAt = time.Time{}
	}
}

// RefuseApp makes GitHub refuse the App appID outright: every request it
// authenticates with its JWT — the installation look-up, a token request —
// answers 403 (an App whose access GitHub revoked). AcceptApp ends it.
func (s *Server) RefuseApp(appID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refusedApps[appID] = true
}

// AcceptApp ends RefuseApp.
func (s *Server) AcceptApp(appID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.refusedApps, appID)
}

// refusal is the 403 GitHub answers a refused App or a call with a
// suspended installation's token, and whether this call gets it (a token
// request for a suspended installation is handleAccessToken's).
func (s *Server) refusal(req *request) (reply, bool) {
	switch who := req.who; {
	case who.app != nil && s.refusedApps[who.app.id]:
		return errorReply(http.StatusForbidden, "Forbidden", req.route.docs), true
	case who.installation != nil && !who.installation.suspendedAt.IsZero():
		return errorReply(http.StatusForbidden, msgInstallationSuspended, req.route.docs), true
	}
	return reply{}, false
}

// suspendedJSON is the installation schema's suspended_at and
// suspended_by for inst: null unless it is suspended.
func suspendedJSON(req *request, inst *installation) (at, by any) {
	if inst.suspendedAt.IsZero() {
		return nil, nil
	}
	return inst.suspendedAt.Format(time.RFC3339), simpleUser(req, "octocat", "User")
}
