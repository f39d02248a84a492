package scalesettest

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Op names one endpoint of the fake, for faults and call counts.
type Op string

// The endpoints.
const (
	OpRegister       Op = "register"
	OpGetRunnerGroup Op = "get runner group"
	OpGetScaleSet    Op = "get scale set"
	OpCreateScaleSet Op = "create scale set"
	OpUpdateScaleSet Op = "update scale set"
	OpDeleteScaleSet Op = "delete scale set"
	OpCreateSession  Op = "create session"
	OpRefreshSession Op = "refresh session"
	OpDeleteSession  Op = "delete session"
	OpGetMessage     Op = "get message"
	OpDeleteMessage  Op = "delete message"
	OpAcquireJobs    Op = "acquire jobs"
	OpGenerateJIT    Op = "generate jit config"
	OpGetRunner      Op = "get runner"
	OpRemoveRunner   Op = "remove runner"
)

// Call is one request the fake answered.
type Call struct {
	Op     Op
	Method string
	Path   string
	Query  url.Values
	Status int
	// AuthScheme is the Authorization header's scheme (Bearer, RemoteAuth).
	AuthScheme string
	// MaxCapacity is the X-ScaleSetMaxCapacity header of a poll.
	MaxCapacity string
	At          time.Time
}

// Calls returns every call so far, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Count is how many calls op got, with any status.
func (s *Server) Count(op Op) int {
	return s.CountStatus(op, 0)
}

// CountStatus is how many calls op answered with status (0: any).
func (s *Server) CountStatus(op Op, status int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c.Op == op && (status == 0 || c.Status == status) {
			n++
		}
	}
	return n
}

// recorder keeps the status a handler answered.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// handle wraps an endpoint: it records the call, applies a fault armed
// for op, and checks the api-version every Actions-service call carries.
func (s *Server) handle(op Op, service bool, fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w}
		scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		defer func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.calls = append(s.calls, Call{
				Op: op, Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Status: rec.status,
				AuthScheme: scheme, MaxCapacity: r.Header.Get("X-ScaleSetMaxCapacity"), At: s.nowLocked(),
			})
		}()
		if s.applyFault(rec, r, op) {
			return
		}
		if service && r.URL.Query().Get("api-version") != "6.0-preview" {
			writeException(rec, http.StatusBadRequest, "VssInvalidApiVersionException", "api-version=6.0-preview is required")
			return
		}
		fn(rec, r)
	}
}

// limitBody caps what the fake reads of a request.
func limitBody(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
}

func pathID(r *http.Request, name string) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue(name), 10, 64)
	return id, err == nil
}
