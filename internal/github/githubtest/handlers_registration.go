package githubtest

import (
	"fmt"
	"net/http"
	"time"
)

// registrationTokenTTL is how long GitHub's runner registration tokens
// last: one hour, by its documentation of the endpoint.
const registrationTokenTTL = time.Hour

// registrationTokenJSON is the description's authentication-token schema,
// as far as the registration-token endpoints fill it.
type registrationTokenJSON struct {
	Token     string `json:"token"`
	ExpiresAt string `json:"expires_at"`
}

// handleRegistrationToken mints a runner registration token for the owner
// the path names: 201 with the token and its expiry. Each call mints a new
// token, as GitHub does; RegistrationTokens lists them.
func (s *Server) handleRegistrationToken(req *request) reply {
	o := s.owner(req)
	s.registrationSeq++
	token := fmt.Sprintf("RT%026d", s.registrationSeq)
	s.registrationTokens = append(s.registrationTokens, RegistrationToken{Owner: o.key, Token: token})
	return jsonReply(http.StatusCreated, registrationTokenJSON{
		Token:     token,
		ExpiresAt: s.now().Add(registrationTokenTTL).UTC().Truncate(time.Second).Format(time.RFC3339),
	})
}

// RegistrationToken is one runner registration token the fake minted, for
// the owner key ("org", "org/repo" or "enterprise:slug", as the fake
// keys owners).
type RegistrationToken struct {
	Owner string
	Token string
}

// RegistrationTokens lists the registration tokens minted so far, oldest
// first.
func (s *Server) RegistrationTokens() []RegistrationToken {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]RegistrationToken(nil), s.registrationTokens...)
}
