package scalesettest

import (
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/github/githubtest"
)

// BehindREST serves the fake and a REST fake (githubtest, at restURL)
// behind one API root, as github.com serves both: POST
// {front}/api/v3/actions/runner-registration reaches this fake, every
// other call the REST fake, which mints the registration tokens this fake
// accepts when minted says so (Options.ExternalToken). opts.WebURL is the
// front. runfleet's github.base_url is {front}/api/v3. Both close at t's
// cleanup.
func BehindREST(t testing.TB, restURL string, minted func(token string) bool, opts Options) (front *httptest.Server, s *Server) {
	rest, err := url.Parse(strings.TrimSuffix(restURL, "/"))
	if err != nil {
		t.Fatalf("scalesettest: REST fake URL %q: %v", restURL, err)
	}
	var actions *url.URL
	front = httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		if r.In.URL.Path == githubtest.GHESPathPrefix+"/actions/runner-registration" {
			r.SetURL(actions)
			r.Out.URL.Path = "/api/actions/runner-registration"
			return
		}
		r.SetURL(rest)
	}})
	t.Cleanup(front.Close)
	opts.WebURL, opts.ExternalToken = front.URL, minted
	s = New(t, opts)
	actions, _ = url.Parse(s.URL())
	return front, s
}

// Minted is BehindREST's minted for a REST fake: whether rest minted the
// registration token.
func Minted(rest *githubtest.Server) func(token string) bool {
	return func(token string) bool {
		for _, m := range rest.RegistrationTokens() {
			if m.Token == token {
				return true
			}
		}
		return false
	}
}
