// Package runtimeapi is a Lambda Runtime API server for tests: it plays
// the part of Lambda's execution environment for a real bootstrap binary,
// so tests run functions/* exactly as deployed — aws-lambda-go's
// lambda.Start polling for invocations over HTTP — without Docker or AWS's
// Runtime Interface Emulator.
//
// It serves the documented protocol
// (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html):
//
//	GET  /2018-06-01/runtime/invocation/next          blocks until Invoke queues an event
//	POST /2018-06-01/runtime/invocation/{id}/response the function's result
//	POST /2018-06-01/runtime/invocation/{id}/error    a function error
//	POST /2018-06-01/runtime/init/error               the runtime could not start
//
// One Server is one execution environment: it hands each invocation to one
// bootstrap process (Start) at a time, as Lambda does.
package runtimeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The protocol's headers.
const (
	HeaderRequestID          = "Lambda-Runtime-Aws-Request-Id"
	HeaderDeadlineMS         = "Lambda-Runtime-Deadline-Ms"
	HeaderInvokedFunctionARN = "Lambda-Runtime-Invoked-Function-Arn"
	HeaderTraceID            = "Lambda-Runtime-Trace-Id"
	HeaderFunctionErrorType  = "Lambda-Runtime-Function-Error-Type"
)

const apiPrefix = "/2018-06-01/runtime/"

// maxBody bounds what the server reads from the runtime: Lambda's own
// limit for a synchronous response is 6 MB.
const maxBody = 6 << 20

// FunctionError is what the runtime reported for an invocation through
// /error, or for its start through /init/error: the JSON body's errorType
// and errorMessage, and the Lambda-Runtime-Function-Error-Type header.
type FunctionError struct {
	Type       string   `json:"errorType"`
	Message    string   `json:"errorMessage"`
	StackTrace []string `json:"-"`
	// HeaderType is the Lambda-Runtime-Function-Error-Type header ("" when
	// the runtime sent none).
	HeaderType string `json:"-"`
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("function error %s: %s", e.Type, e.Message)
}

// Options configure a Server.
type Options struct {
	// FunctionName names the function in its invoked ARN.
	FunctionName string
	// Timeout is each invocation's deadline, sent as
	// Lambda-Runtime-Deadline-Ms (default one minute).
	Timeout time.Duration
}

// Server is one function's Runtime API.
type Server struct {
	opts     Options
	listener net.Listener
	http     *http.Server

	queue    chan *invocation
	requests atomic.Int64

	mu      sync.Mutex
	pending map[string]*invocation
	initErr *FunctionError
	// gone is set when the bootstrap process has exited: nothing queued
	// can be served any more.
	gone error
	done chan struct{}
}

// invocation is one event on its way through the runtime.
type invocation struct {
	id      string
	payload []byte
	result  chan outcome
}

type outcome struct {
	response []byte
	fnErr    *FunctionError
	err      error
}

// NewServer starts a Runtime API on a loopback port; it stops when the
// test ends.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.FunctionName == "" {
		opts.FunctionName = "function"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Minute
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("runtimeapi: listen: %v", err)
	}
	s := &Server{
		opts:     opts,
		listener: l,
		queue:    make(chan *invocation),
		pending:  map[string]*invocation{},
		done:     make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+apiPrefix+"invocation/next", s.next)
	mux.HandleFunc("POST "+apiPrefix+"invocation/{id}/response", s.response)
	mux.HandleFunc("POST "+apiPrefix+"invocation/{id}/error", s.invocationError)
	mux.HandleFunc("POST "+apiPrefix+"init/error", s.initError)
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.http.Serve(l) }()
	t.Cleanup(s.close)
	return s
}

// Addr is the host:port a runtime is given as AWS_LAMBDA_RUNTIME_API.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// FunctionARN is the ARN invocations carry.
func (s *Server) FunctionARN() string {
	return "arn:aws:lambda:us-east-1:123456789012:function:" + s.opts.FunctionName
}

// Invoke queues payload as the next event and waits for the runtime's
// answer: its response body, or the function error it reported. err is
// set when there was neither — ctx ended, or the bootstrap exited first.
func (s *Server) Invoke(ctx context.Context, payload []byte) (response []byte, fnErr *FunctionError, err error) {
	inv := &invocation{
		id:      fmt.Sprintf("%08d-0000-4000-8000-%012d", s.requests.Add(1), time.Now().UnixNano()%1e12),
		payload: payload,
		result:  make(chan outcome, 1),
	}
	select {
	case s.queue <- inv:
	case <-s.done:
		return nil, nil, s.goneErr()
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("runtimeapi: %s: no runtime asked for the next invocation: %w", s.opts.FunctionName, ctx.Err())
	}
	select {
	case out := <-inv.result:
		return out.response, out.fnErr, out.err
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("runtimeapi: %s: invocation %s got no answer: %w", s.opts.FunctionName, inv.id, ctx.Err())
	}
}

// InitError is what the runtime reported through /init/error, if it did.
func (s *Server) InitError() (*FunctionError, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.initErr, s.initErr != nil
}

// runtimeGone ends every invocation: the bootstrap has exited with err.
func (s *Server) runtimeGone(err error) {
	s.mu.Lock()
	if s.gone != nil {
		s.mu.Unlock()
		return
	}
	s.gone = err
	pending := s.pending
	s.pending = map[string]*invocation{}
	close(s.done)
	s.mu.Unlock()
	for _, inv := range pending {
		inv.result <- outcome{err: fmt.Errorf("runtimeapi: %s: invocation %s: %w", s.opts.FunctionName, inv.id, err)}
	}
}

func (s *Server) goneErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Errorf("runtimeapi: %s: %w", s.opts.FunctionName, s.gone)
}

func (s *Server) close() {
	s.runtimeGone(errors.New("the test ended"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.http.Shutdown(ctx)
}

// next hands the runtime the next event, waiting for one as long as the
// runtime keeps the request open.
func (s *Server) next(w http.ResponseWriter, r *http.Request) {
	var inv *invocation
	select {
	case inv = <-s.queue:
	case <-s.done:
		http.Error(w, "the execution environment is shutting down", http.StatusGone)
		return
	case <-r.Context().Done():
		return
	}
	s.mu.Lock()
	if s.gone != nil {
		s.mu.Unlock()
		inv.result <- outcome{err: fmt.Errorf("runtimeapi: %s: invocation %s: %w", s.opts.FunctionName, inv.id, s.gone)}
		http.Error(w, "the execution environment is shutting down", http.StatusGone)
		return
	}
	s.pending[inv.id] = inv
	s.mu.Unlock()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(HeaderRequestID, inv.id)
	h.Set(HeaderDeadlineMS, strconv.FormatInt(time.Now().Add(s.opts.Timeout).UnixMilli(), 10))
	h.Set(HeaderInvokedFunctionARN, s.FunctionARN())
	h.Set(HeaderTraceID, fmt.Sprintf("Root=1-%08x-%024x;Parent=%016x;Sampled=0", time.Now().Unix(), s.requests.Load(), s.requests.Load()))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(inv.payload)
}

func (s *Server) response(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	s.finish(w, r.PathValue("id"), outcome{response: body})
}

func (s *Server) invocationError(w http.ResponseWriter, r *http.Request) {
	fnErr, ok := readError(w, r)
	if !ok {
		return
	}
	s.finish(w, r.PathValue("id"), outcome{fnErr: fnErr})
}

func (s *Server) initError(w http.ResponseWriter, r *http.Request) {
	fnErr, ok := readError(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	s.initErr = fnErr
	s.mu.Unlock()
	writeAccepted(w)
}

// finish delivers an invocation's outcome; an unknown or already answered
// request id is refused, as Lambda refuses it.
func (s *Server) finish(w http.ResponseWriter, id string, out outcome) {
	s.mu.Lock()
	inv, ok := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if !ok {
		writeAPIError(w, http.StatusBadRequest, "InvalidRequestID", "no invocation "+id+" is waiting for an answer")
		return
	}
	inv.result <- out
	writeAccepted(w)
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeAPIError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", err.Error())
		return nil, false
	}
	return body, true
}

// decodeError reads an error body: Lambda documents errorMessage,
// errorType and stackTrace, and the type header next to them.
func decodeError(body []byte, h http.Header) (*FunctionError, error) {
	var e struct {
		Type       string          `json:"errorType"`
		Message    string          `json:"errorMessage"`
		StackTrace json.RawMessage `json:"stackTrace"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, fmt.Errorf("error body is not JSON: %v: %q", err, truncate(body))
	}
	fnErr := &FunctionError{Type: e.Type, Message: e.Message, HeaderType: h.Get(HeaderFunctionErrorType)}
	// aws-lambda-go sends frames as objects; keep each as its JSON text.
	var frames []json.RawMessage
	if json.Unmarshal(e.StackTrace, &frames) == nil {
		for _, f := range frames {
			fnErr.StackTrace = append(fnErr.StackTrace, string(f))
		}
	}
	return fnErr, nil
}

func writeAccepted(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

func writeAPIError(w http.ResponseWriter, status int, errType, msg string) {
	body, _ := json.Marshal(map[string]string{"errorType": errType, "errorMessage": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func truncate(b []byte) string {
	s := string(b)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// readError reads an error report's body (an invocation's or init's); a
// bad one is answered 400 here and false returned.
func readError(w http.ResponseWriter, r *http.Request) (*FunctionError, bool) {
	body, ok := readBody(w, r)
	if !ok {
		return nil, false
	}
	fnErr, err := decodeError(body, r.Header)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "InvalidErrorBody", err.Error())
		return nil, false
	}
	return fnErr, true
}
