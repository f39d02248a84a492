package githubtest

import (
	"net/http"
	"strconv"
	"time"
)

// rateWindow is GitHub's primary rate-limit window.
const rateWindow = time.Hour

// Documentation URLs GitHub puts in rate-limit errors. go-github recognises
// a secondary limit by the "secondary-rate-limits" suffix.
const (
	docsPrimaryRateLimit   = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits"
	docsSecondaryRateLimit = "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)

// rateBucket is one identity's primary rate limit.
type rateBucket struct {
	limit int
	used  int
	reset time.Time
}

// RateLimit is an identity's primary rate-limit state.
type RateLimit struct {
	Limit     int
	Remaining int
	Used      int
	Reset     time.Time
}

// RateLimits reports every identity's rate limit by Call.Identity key
// ("installation:<id>", "token:<redacted>", "app:<id>").
func (s *Server) RateLimits() map[string]RateLimit {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]RateLimit, len(s.buckets))
	for k, b := range s.buckets {
		out[k] = RateLimit{Limit: b.limit, Remaining: b.limit - b.used, Used: b.used, Reset: b.reset}
	}
	return out
}

// ExhaustRateLimit spends every identity's primary limit until reset: each
// call answers GitHub's 403 "API rate limit exceeded" until then.
func (s *Server) ExhaustRateLimit(reset time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exhaustedTill = reset
}

// spendRateLimit counts the call against the caller's bucket and sets the
// x-ratelimit-* headers; a spent bucket answers 403 as GitHub does.
func (s *Server) spendRateLimit(req *request) (reply, bool) {
	now := s.now()
	b, ok := s.buckets[req.who.key]
	if !ok || !now.Before(b.reset) {
		b = &rateBucket{limit: s.rateLimit, reset: now.Add(rateWindow).Truncate(time.Second)}
		s.buckets[req.who.key] = b
	}
	if now.Before(s.exhaustedTill) {
		// The window ends when the exhaustion does; a fresh one starts after.
		b.used, b.reset = b.limit, s.exhaustedTill
	}
	if b.used >= b.limit {
		req.rateHeader = rateHeaders(b.limit, 0, b.used, b.reset)
		return primaryLimitReply(req), true
	}
	// The call that spends the last unit succeeds with remaining 0; the
	// next one is refused.
	b.used++
	req.rateHeader = rateHeaders(b.limit, b.limit-b.used, b.used, b.reset)
	return reply{}, false
}

func rateHeaders(limit, remaining, used int, reset time.Time) http.Header {
	h := http.Header{}
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(remaining, 0)))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("X-RateLimit-Used", strconv.Itoa(used))
	h.Set("X-RateLimit-Resource", "core")
	return h
}

func primaryLimitReply(req *request) reply {
	return errorReply(http.StatusForbidden, "API rate limit exceeded for "+req.who.subject+".", docsPrimaryRateLimit)
}

// anonymousLimit is GitHub's primary limit for unauthenticated calls.
const anonymousLimit = 60

// anonymousRateHeaders charges a call that carried no valid credential to
// the shared unauthenticated bucket, for its headers only: GitHub sends
// x-ratelimit-* on every answer, 401s included.
func (s *Server) anonymousRateHeaders() http.Header {
	now := s.now()
	b, ok := s.buckets["anonymous"]
	if !ok || !now.Before(b.reset) {
		b = &rateBucket{limit: anonymousLimit, reset: now.Add(rateWindow).Truncate(time.Second)}
		s.buckets["anonymous"] = b
	}
	if b.used < b.limit {
		b.used++
	}
	return rateHeaders(b.limit, b.limit-b.used, b.used, b.reset)
}
