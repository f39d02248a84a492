package githubtest

import (
	"net/http"
	"strconv"
	"sync"
	"time"
)

// GitHub's documented secondary limits for REST, per identity.
const (
	DefaultPointsPerMinute = 900
	DefaultMaxInFlight     = 100
	// SecondaryPenalty is how long the fake refuses every call of an
	// identity after a secondary limit, and the retry-after it sends.
	SecondaryPenalty = time.Minute
)

// SecondaryLimits is the fake's model of GitHub's secondary rate limits
// (docs.github.com, "Rate limits for the REST API"): a GET, HEAD or
// OPTIONS costs 1 point, any other method 5; an identity may spend
// PointsPerMinute points in any sliding 60 s window and have MaxInFlight
// requests in flight. Past either, the call is refused with Status (403 by
// default, or 429), retry-after: 60 and the secondary-limit message and
// documentation URL go-github recognises, and a penalty starts: every call
// of the identity is refused until it ends, and each refused call extends
// it by another Penalty — as GitHub warns, calling through a secondary
// limit only prolongs it.
type SecondaryLimits struct {
	PointsPerMinute int           // default DefaultPointsPerMinute
	MaxInFlight     int           // default DefaultMaxInFlight
	Penalty         time.Duration // default SecondaryPenalty
	Status          int           // default 403
}

// WithSecondaryLimits turns the secondary-limit model on. It is off by
// default, so tests that do not ask for it are never refused by it.
func WithSecondaryLimits(l SecondaryLimits) Option {
	return func(s *Server) {
		if l.PointsPerMinute == 0 {
			l.PointsPerMinute = DefaultPointsPerMinute
		}
		if l.MaxInFlight == 0 {
			l.MaxInFlight = DefaultMaxInFlight
		}
		if l.Penalty == 0 {
			l.Penalty = SecondaryPenalty
		}
		if l.Status == 0 {
			l.Status = http.StatusForbidden
		}
		s.secondary = &secondaryModel{limits: l, identities: map[string]*secondaryState{}}
	}
}

// SecondaryRefusals is how many calls the secondary-limit model refused.
func (s *Server) SecondaryRefusals() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.secondary == nil {
		return 0
	}
	return s.secondary.refusals
}

type secondaryModel struct {
	limits     SecondaryLimits
	identities map[string]*secondaryState
	refusals   int
}

type secondaryState struct {
	spent        []spend // in the last minute, oldest first
	penaltyUntil time.Time
}

type spend struct {
	at   time.Time
	cost int
}

func pointCost(method string) int {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return 1
	}
	return 5
}

// spendSecondary charges the call to its identity's window, or refuses it.
// inFlight is the number of requests with the call's credential that are
// in the server, itself included.
func (s *Server) spendSecondary(req *request, inFlight int) (reply, bool) {
	m := s.secondary
	if m == nil {
		return reply{}, false
	}
	now := s.now()
	st := m.identities[req.who.key]
	if st == nil {
		st = &secondaryState{}
		m.identities[req.who.key] = st
	}
	for len(st.spent) > 0 && !st.spent[0].at.After(now.Add(-time.Minute)) {
		st.spent = st.spent[1:]
	}
	cost, used := pointCost(req.http.Method), 0
	for _, sp := range st.spent {
		used += sp.cost
	}
	if now.Before(st.penaltyUntil) || used+cost > m.limits.PointsPerMinute || inFlight > m.limits.MaxInFlight {
		m.refusals++
		st.penaltyUntil = now.Add(m.limits.Penalty)
		return s.secondaryReply(m.limits), true
	}
	st.spent = append(st.spent, spend{at: now, cost: cost})
	return reply{}, false
}

func (s *Server) secondaryReply(l SecondaryLimits) reply {
	rep := errorReply(l.Status, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "+
		"If you reach out to GitHub Support for help, please include the request ID "+s.requestID()+".", docsSecondaryRateLimit)
	rep.header = http.Header{}
	rep.header.Set("Retry-After", strconv.Itoa(int((l.Penalty+time.Second-1)/time.Second)))
	return rep
}

// inFlight counts the requests in the server per credential (the
// Authorization header): GitHub's concurrency limit is per identity, and
// the identity is known only under the server's lock, after the request
// was read.
type inFlight struct {
	mu sync.Mutex
	n  map[string]int
}

func (f *inFlight) enter(r *http.Request) func() {
	key := r.Header.Get("Authorization")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]int{}
	}
	f.n[key]++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.n[key]--; f.n[key] == 0 {
			delete(f.n, key)
		}
	}
}

func (f *inFlight) count(r *http.Request) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[r.Header.Get("Authorization")]
}
