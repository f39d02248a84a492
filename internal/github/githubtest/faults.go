package githubtest

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type faultKind int

const (
	faultPlain faultKind = iota
	faultNotFound
	faultConflict
	faultBusy
	faultPrimaryRateLimit
	faultSecondaryRateLimit
	faultForbidden
)

// Fault is an error GitHub answers in place of an operation. Build one with
// NotFound, Conflict, Busy, PrimaryRateLimit, TooManyRequests,
// SecondaryRateLimit, ServerError or Forbidden, then adjust it with Times
// and AndApply, and install it with Server.Inject.
type Fault struct {
	// Status is the HTTP status answered.
	Status int
	// Message replaces GitHub's message for the fault when not empty.
	Message string
	// RetryAfter, when positive, is sent as the retry-after header.
	RetryAfter time.Duration
	// ResetAt is the x-ratelimit-reset a primary rate-limit fault sends
	// (default: a minute after the call).
	ResetAt time.Time
	// Count is how many matching calls the fault answers; 0 means every
	// one until ClearFaults.
	Count int
	// ApplyEffect makes the operation take effect although the error is
	// answered, as GitHub sometimes does (a JIT config that errors yet
	// registers the runner, a delete that errors yet removes it).
	ApplyEffect bool
	kind        faultKind
}

// Times returns f limited to the next n matching calls.
func (f Fault) Times(n int) Fault {
	f.Count = n
	return f
}

// AndApply returns f with ApplyEffect set.
func (f Fault) AndApply() Fault {
	f.ApplyEffect = true
	return f
}

// NotFound is GitHub's 404.
func NotFound() Fault { return Fault{Status: http.StatusNotFound, kind: faultNotFound} }

// Conflict is the 409 GitHub answers a JIT config whose runner name is
// taken ("Already exists - A runner with the name … already exists.").
func Conflict() Fault { return Fault{Status: http.StatusConflict, kind: faultConflict} }

// Busy is the 422 GitHub answers deleting a runner that is running a job
// (`Runner "<name>" is still running a job`).
func Busy() Fault { return Fault{Status: http.StatusUnprocessableEntity, kind: faultBusy} }

// PrimaryRateLimit is GitHub's 403 for a spent primary limit:
// x-ratelimit-remaining 0, x-ratelimit-reset = reset, and "API rate limit
// exceeded for installation ID …". Set Status to 429 for GitHub's other
// form of the same answer.
func PrimaryRateLimit(reset time.Time) Fault {
	return Fault{Status: http.StatusForbidden, ResetAt: reset, kind: faultPrimaryRateLimit}
}

// SecondaryRateLimit is GitHub's 403 "You have exceeded a secondary rate
// limit…", with retry-after when retryAfter is positive (GitHub sometimes
// omits it).
func SecondaryRateLimit(retryAfter time.Duration) Fault {
	return Fault{Status: http.StatusForbidden, RetryAfter: retryAfter, kind: faultSecondaryRateLimit}
}

// TooManyRequests is GitHub's 429 with retry-after and the secondary-limit
// message (go-github v57 does not classify it: it surfaces as an
// *ErrorResponse).
func TooManyRequests(retryAfter time.Duration) Fault {
	return Fault{Status: http.StatusTooManyRequests, RetryAfter: retryAfter, kind: faultSecondaryRateLimit}
}

// ServerError is a 5xx (500, 502, 503, 504).
func ServerError(status int) Fault { return Fault{Status: status} }

// Forbidden is the 403 an App without the needed permission gets
// ("Resource not accessible by integration").
func Forbidden() Fault { return Fault{Status: http.StatusForbidden, kind: faultForbidden} }

// activeFault is an injected fault and what it matches.
type activeFault struct {
	match routeMatcher
	fault Fault
	left  int // calls left to answer; negative = unlimited
}

// routeMatcher matches calls by "METHOD /path": METHOD may be "*"; path
// segments may be literal, "*" or a description parameter such as
// "{runner_id}", so both route patterns and concrete paths work.
type routeMatcher struct {
	method string
	segs   []string
}

func parseMatcher(spec string) (routeMatcher, error) {
	method, path, ok := strings.Cut(strings.TrimSpace(spec), " ")
	path = strings.TrimSpace(path)
	if !ok || method == "" || !strings.HasPrefix(path, "/") {
		return routeMatcher{}, fmt.Errorf("githubtest: route %q: want \"METHOD /path\" (METHOD may be *)", spec)
	}
	path, _ = stripPrefix(path)
	return routeMatcher{method: strings.ToUpper(method), segs: splitPath(path)}, nil
}

func (m routeMatcher) matches(method, path string) bool {
	if m.method != "*" && m.method != method {
		return false
	}
	_, ok := matchSegments(m.segs, splitPath(path))
	return ok
}

// Inject makes calls matching route answer f: route is "METHOD /path", for
// example "DELETE /orgs/{org}/actions/runners/{runner_id}",
// "POST /repos/octo-org/app/actions/runners/generate-jitconfig" or
// "* /orgs/octo-org/*/*". Faults apply after authentication and the
// primary rate limit, first injected first.
func (s *Server) Inject(route string, f Fault) {
	m, err := parseMatcher(route)
	if err != nil {
		s.t.Errorf("%v", err)
		return
	}
	if f.Status == 0 {
		s.t.Errorf("githubtest: Inject(%q): fault has no Status", route)
		return
	}
	left := f.Count
	if left <= 0 {
		left = -1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &activeFault{match: m, fault: f, left: left})
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// takeFault returns the first fault matching the call and uses it up.
func (s *Server) takeFault(req *request) *Fault {
	path, _ := stripPrefix(req.http.URL.Path)
	for i, af := range s.faults {
		if af.left == 0 || !af.match.matches(req.http.Method, path) {
			continue
		}
		if af.left > 0 {
			af.left--
		}
		f := af.fault
		if af.left == 0 {
			s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
		}
		return &f
	}
	return nil
}

// faultReply renders a fault as GitHub would answer it for this call.
func (s *Server) faultReply(req *request, f *Fault) reply {
	docs := req.route.docs
	message := f.Message
	var rep reply
	switch f.kind {
	case faultNotFound:
		rep = errorReply(f.Status, or(message, "Not Found"), docs)
	case faultConflict:
		rep = errorReply(f.Status, or(message, conflictMessage(jitRequestName(req.body))), docs)
	case faultBusy:
		rep = busyReply(or(message, busyMessage(s.runnerNameForCall(req))), docs)
		rep.status = f.Status
	case faultForbidden:
		rep = errorReply(f.Status, or(message, "Resource not accessible by integration"), docs)
	case faultPrimaryRateLimit:
		reset := f.ResetAt
		if reset.IsZero() {
			reset = s.now().Add(time.Minute)
		}
		rep = errorReply(f.Status, or(message, "API rate limit exceeded for "+req.who.subject+"."), docsPrimaryRateLimit)
		limit := atoi(req.rateHeader.Get("X-RateLimit-Limit"))
		req.rateHeader = rateHeaders(limit, 0, limit, reset)
	case faultSecondaryRateLimit:
		rep = errorReply(f.Status, or(message, "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "+
			"If you reach out to GitHub Support for help, please include the request ID "+s.requestID()+"."),
			docsSecondaryRateLimit)
	default:
		rep = errorReply(f.Status, or(message, serverErrorMessage(f.Status)), docs)
	}
	if f.RetryAfter > 0 {
		if rep.header == nil {
			rep.header = http.Header{}
		}
		rep.header.Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
	}
	return rep
}

// runnerNameForCall names the runner a call's path points at, for a busy
// fault's message.
func (s *Server) runnerNameForCall(req *request) string {
	if id, err := strconv.ParseInt(req.params["runner_id"], 10, 64); err == nil {
		if r, ok := s.runners[id]; ok {
			return r.Name
		}
	}
	return "runner-" + req.params["runner_id"]
}

func serverErrorMessage(status int) string {
	if status == http.StatusInternalServerError {
		return "Server Error"
	}
	return http.StatusText(status)
}

func or(s, fallback string) string {
	if s != "" {
		return s
	}
	return fallback
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
