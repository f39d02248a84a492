package githubtest

import "time"

// Call is one request the server answered.
type Call struct {
	Method string
	// Route is the operation as "METHOD /pattern" ("" for unknown paths).
	Route string
	// Path is the concrete API path, without a GHES /api/v3 prefix.
	Path   string
	Status int
	// Identity is who the call authenticated as ("installation:<id>",
	// "token:<redacted>", "app:<id>"), "" if it did not.
	Identity string
	// Faulted marks calls answered by an injected fault.
	Faulted bool
	Time    time.Time
}

// Calls returns every call answered so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// CallCount counts answered calls matching route, given as for Inject
// ("DELETE /orgs/{org}/actions/runners/{runner_id}", "* /orgs/octo-org/*/*/*",
// or "*" for every call).
func (s *Server) CallCount(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if route == "*" {
		return len(s.calls)
	}
	m, err := parseMatcher(route)
	if err != nil {
		s.t.Errorf("%v", err)
		return 0
	}
	n := 0
	for _, c := range s.calls {
		if m.matches(c.Method, c.Path) {
			n++
		}
	}
	return n
}

// APICallCount counts calls other than installation-token requests: the
// calls that spend an installation's rate limit on runner work.
func (s *Server) APICallCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c.Route != RouteAccessTokens {
			n++
		}
	}
	return n
}

// ResetCalls forgets the calls answered so far.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}
