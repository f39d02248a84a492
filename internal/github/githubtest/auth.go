package githubtest

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// installation is a GitHub App installation.
type installation struct {
	id      int64
	account string // "" = every owner
	// appID is the App installed; 0 is the first App added.
	appID int64
	// suspendedAt is when the installation was suspended (zero: it is
	// not): GitHub refuses its tokens (suspended.go).
	suspendedAt time.Time
}

// installationToken is an issued installation access token.
type installationToken struct {
	installation *installation
	expiresAt    time.Time
}

// identity is who a call is authenticated as; key names its rate-limit
// bucket and is what Call.Identity reports.
type identity struct {
	key          string
	installation *installation // nil for a PAT or the App itself
	// app is the App a JWT authenticated as (nil otherwise).
	app *appIdentity
	// subject is how GitHub names the identity in rate-limit messages.
	subject string
}

// AddToken accepts pat as a personal access token for every owner.
func (s *Server) AddToken(pat string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pats[pat] = true
}

// credential splits an Authorization header: GitHub takes "token X" and
// "Bearer X" (any case) alike.
func credential(header string) (string, bool) {
	scheme, value, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok {
		return "", false
	}
	switch strings.ToLower(scheme) {
	case "token", "bearer":
		value = strings.TrimSpace(value)
		return value, value != ""
	default:
		return "", false
	}
}

// authenticate resolves the caller, answering 401 as GitHub does when the
// credential is missing or wrong.
func (s *Server) authenticate(req *request) (*identity, reply, bool) {
	header := req.http.Header.Get("Authorization")
	if strings.TrimSpace(header) == "" {
		return nil, errorReply(http.StatusUnauthorized, "Requires authentication", req.route.docs), false
	}
	cred, ok := credential(header)
	if req.route.appJWT {
		if !ok {
			return nil, errorReply(http.StatusUnauthorized, msgJWTUndecodable, req.route.docs), false
		}
		return s.authenticateApp(req, cred)
	}
	badCredentials := errorReply(http.StatusUnauthorized, "Bad credentials", docsBase)
	if !ok {
		return nil, badCredentials, false
	}
	if s.pats[cred] {
		return &identity{key: "token:" + redact(cred), subject: "user ID 1"}, reply{}, true
	}
	tok, found := s.tokens[cred]
	if !found || !s.now().Before(tok.expiresAt) {
		return nil, badCredentials, false
	}
	id := strconv.FormatInt(tok.installation.id, 10)
	return &identity{key: "installation:" + id, installation: tok.installation, subject: "installation ID " + id}, reply{}, true
}

// redact keeps a PAT out of test output while telling tokens apart.
func redact(token string) string {
	if len(token) <= 8 {
		return "****"
	}
	return token[:4] + "****" + token[len(token)-4:]
}
