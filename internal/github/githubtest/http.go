package githubtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// request is one API call as the handlers see it.
type request struct {
	http   *http.Request
	route  *route
	params map[string]string
	query  url.Values
	body   []byte
	// apiBase is the absolute base the call came in under, such as
	// "http://127.0.0.1:1234" or "http://127.0.0.1:1234/api/v3", for the
	// URLs GitHub puts in bodies and Link headers.
	apiBase string
	who     *identity
	// rateHeader holds the x-ratelimit-* headers every answer carries.
	rateHeader http.Header
}

// reply is a handler's answer. A nil body sends none (204).
type reply struct {
	status int
	body   any
	header http.Header
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	defer s.inFlight.enter(r)()
	apiPath, prefix := stripPrefix(r.URL.Path)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "reading body: "+err.Error(), http.StatusBadRequest)
		return
	}
	req := &request{http: r, query: r.URL.Query(), body: body, apiBase: "http://" + r.Host + prefix}
	out := s.respond(req, apiPath)
	// Written after the lock is released: a slow reader must not stall
	// every other call.
	for k, vs := range out.header {
		w.Header()[k] = vs
	}
	w.WriteHeader(out.status)
	_, _ = w.Write(out.body)
}

// rendered is an answer ready to write.
type rendered struct {
	status int
	header http.Header
	body   []byte
}

// respond answers and records one call under the server's lock.
func (s *Server) respond(req *request, apiPath string) rendered {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requestSeq++

	rt, params, _ := matchRoute(req.http.Method, apiPath)
	call := Call{Method: req.http.Method, Path: apiPath, Time: s.now()}
	var rep reply
	if rt == nil {
		// GitHub answers unknown paths and methods with a plain 404.
		rep = errorReply(http.StatusNotFound, "Not Found", docsBase)
	} else {
		req.route, req.params = rt, params
		call.Route = rt.key()
		rep = s.dispatch(req, &call)
	}
	if req.who != nil {
		call.Identity = req.who.key
	}
	if req.rateHeader == nil {
		req.rateHeader = s.anonymousRateHeaders()
	}
	call.Status = rep.status
	s.calls = append(s.calls, call)
	return s.render(req, rep)
}

// dispatch runs the pipeline GitHub applies: authentication, a refused
// App or suspended installation (suspended.go), the primary rate limit, the secondary limits (when on), then the operation. Injected faults answer in the
// operation's place, after running it when the fault applies the effect.
func (s *Server) dispatch(req *request, call *Call) reply {
	who, rep, ok := s.authenticate(req)
	if !ok {
		return rep
	}
	req.who = who
	if rep, refused := s.refusal(req); refused {
		return rep
	}
	if rep, limited := s.spendRateLimit(req); limited {
		return rep
	}
	if rep, limited := s.spendSecondary(req, s.inFlight.count(req.http)); limited {
		return rep
	}
	if f := s.takeFault(req); f != nil {
		call.Faulted = true
		if f.ApplyEffect {
			s.answer(req)
		}
		return s.faultReply(req, f)
	}
	return s.answer(req)
}

// answer runs the operation, after checking the owner it names.
func (s *Server) answer(req *request) reply {
	if req.route.ownerKind != "" {
		if _, rep, ok := s.resolveOwner(req); !ok {
			return rep
		}
	}
	return req.route.handle(s, req)
}

// resolveOwner finds the owner the path names and checks the caller may
// reach it: unknown owners are 404, an installation on another account 403.
func (s *Server) resolveOwner(req *request) (*owner, reply, bool) {
	o, ok := s.owners[ownerIndex(ownerKey(req.route.ownerKind, req.params))]
	if !ok || o.kind != req.route.ownerKind {
		return nil, errorReply(http.StatusNotFound, "Not Found", req.route.docs), false
	}
	if inst := req.who.installation; inst != nil && inst.account != "" && !strings.EqualFold(inst.account, o.account()) {
		return nil, errorReply(http.StatusForbidden, "Resource not accessible by integration", req.route.docs), false
	}
	return o, reply{}, true
}

// owner is resolveOwner for handlers, which run only after it succeeded.
func (s *Server) owner(req *request) *owner {
	return s.owners[ownerIndex(ownerKey(req.route.ownerKind, req.params))]
}

// render encodes a reply with the headers GitHub sends on every answer.
func (s *Server) render(req *request, rep reply) rendered {
	h := http.Header{}
	for k, vs := range req.rateHeader {
		h[k] = vs
	}
	for k, vs := range rep.header {
		h[k] = vs
	}
	h.Set("X-GitHub-Request-Id", s.requestID())
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")
	h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	if rep.body == nil {
		return rendered{status: rep.status, header: h}
	}
	b, err := json.Marshal(rep.body)
	if err != nil {
		// A body the fake cannot encode is a bug in the fake.
		h.Set("Content-Type", "text/plain; charset=utf-8")
		return rendered{status: http.StatusInternalServerError, header: h, body: []byte("githubtest: encoding reply: " + err.Error())}
	}
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	return rendered{status: rep.status, header: h, body: b}
}

// requestID is the current call's X-GitHub-Request-Id, which GitHub also
// quotes in secondary rate-limit messages.
func (s *Server) requestID() string {
	return fmt.Sprintf("0000:%04X:%06X", s.requestSeq%0xffff, s.requestSeq)
}

// basicError is GitHub's error body ("basic-error" in its description);
// current GitHub also echoes the status as a string.
type basicError struct {
	Message          string `json:"message"`
	DocumentationURL string `json:"documentation_url"`
	Status           string `json:"status,omitempty"`
}

func errorReply(status int, message, docs string) reply {
	return reply{status: status, body: basicError{Message: message, DocumentationURL: docs, Status: strconv.Itoa(status)}}
}

func jsonReply(status int, body any) reply {
	return reply{status: status, body: body}
}
