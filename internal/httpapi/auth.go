package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"

	"github.com/runfleet/runfleet/internal/config"
)

// DisabledMessage is the answer of every route when no token is configured.
const DisabledMessage = "operator API disabled: set " + config.APITokenKeys

type disabled struct{}

func (disabled) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	writeError(w, http.StatusNotFound, DisabledMessage)
}

// guard lets through only requests bearing the configured token. It
// compares SHA-256 digests in constant time, so neither the token's bytes
// nor its length can be learned from response timing.
type guard struct {
	token [sha256.Size]byte
	log   *slog.Logger
	next  http.Handler
}

func digest(s string) [sha256.Size]byte { return sha256.Sum256([]byte(s)) }

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	presented, problem := bearer(r.Header.Get("Authorization"))
	if problem == "" {
		sum := digest(presented)
		if subtle.ConstantTimeCompare(sum[:], g.token[:]) != 1 {
			problem = "wrong bearer token"
		}
	}
	if problem != "" {
		// The presented token is never logged: it may be a real secret sent
		// to the wrong server.
		g.log.WarnContext(r.Context(), "operator API request refused",
			"reason", problem, "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="runfleet"`)
		writeError(w, http.StatusUnauthorized, problem)
		return
	}
	g.next.ServeHTTP(w, r)
}

// bearer extracts the token of an "Authorization: Bearer <token>" header,
// or says what is wrong with the header.
func bearer(header string) (token, problem string) {
	if header == "" {
		return "", "missing bearer token (send Authorization: Bearer TOKEN, with the token the server reads from " + config.APITokenKeys + ")"
	}
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", "Authorization header is not a bearer token"
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return "", "empty bearer token"
	}
	return token, ""
}
