package statuspage

import (
	"crypto/sha256"
	"crypto/subtle"
	"net"
	"net/http"
	"strings"

	"github.com/runfleet/runfleet/internal/config"
)

// access decides who may read the page. A browser cannot attach a bearer
// header to a page load, so with a token configured the page also accepts
// it as ?token= (and keeps it in its refresh URL); without one, only this
// machine may look.
type access struct {
	token    [sha256.Size]byte
	hasToken bool
}

func newAccess(token string) access {
	if token == "" {
		return access{}
	}
	return access{token: sha256.Sum256([]byte(token)), hasToken: true}
}

// check returns "" when r may see the page, else why not.
func (a access) check(r *http.Request) string {
	if !a.hasToken {
		if loopback(r.RemoteAddr) {
			return ""
		}
		return "the status page is served only to loopback clients when no operator API token is configured (" + config.APITokenKeys + ")"
	}
	presented := r.URL.Query().Get("token")
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return "Authorization header is not a bearer token"
		}
		presented = strings.TrimSpace(tok)
	}
	if presented == "" {
		return "missing token: open /?token=TOKEN or send Authorization: Bearer TOKEN, with the token the server reads from " + config.APITokenKeys
	}
	// Digests compared in constant time: neither the token's bytes nor its
	// length leak through timing.
	sum := sha256.Sum256([]byte(presented))
	if subtle.ConstantTimeCompare(sum[:], a.token[:]) != 1 {
		return "wrong token"
	}
	return ""
}

func loopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
