package enginetest

import (
	"context"
	"sync"

	"github.com/runfleet/runfleet/providers"
)

// FaultRefused is the fault of a create a Recorder was told to fail.
const FaultRefused = "enginetest: create refused"

// Recorder stands between the engine and a pool's provider and keeps what
// the engine asked of it: every create request, and the order of creates
// and deletes. It can fail creates as real clouds do — before anything is
// made, or after the machine was (a quota check that fails late).
type Recorder struct {
	providers.Provider

	mu       sync.Mutex
	calls    []string
	requests map[string][]providers.CreateRequest
	failing  int
	late     bool
	before   func(ctx context.Context, req providers.CreateRequest)
}

// FailCreates fails the next n creates; with afterMachine the provider
// makes the machine first, and it is left behind.
func (r *Recorder) FailCreates(n int, afterMachine bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failing, r.late = n, afterMachine
}

// BeforeCreate runs f at the start of every create, to see what the
// provider would find when asked (what the engine stored for the machine).
func (r *Recorder) BeforeCreate(f func(ctx context.Context, req providers.CreateRequest)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.before = f
}

// CreateInstance implements providers.Provider.
func (r *Recorder) CreateInstance(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	r.mu.Lock()
	before := r.before
	r.mu.Unlock()
	if before != nil {
		before(ctx, req)
	}
	r.mu.Lock()
	r.calls = append(r.calls, "create "+req.Name)
	if r.requests == nil {
		r.requests = map[string][]providers.CreateRequest{}
	}
	r.requests[req.Name] = append(r.requests[req.Name], req)
	fail, late := r.failing > 0, r.late
	if fail {
		r.failing--
	}
	r.mu.Unlock()
	refused := &providers.Error{Op: providers.OpCreate, Instance: req.Name, Fault: FaultRefused}
	if fail && !late {
		return providers.Instance{}, refused
	}
	inst, err := r.Provider.CreateInstance(ctx, req)
	if fail && err == nil {
		return providers.Instance{}, refused
	}
	return inst, err
}

// DeleteInstance implements providers.Provider.
func (r *Recorder) DeleteInstance(ctx context.Context, instance string) error {
	r.mu.Lock()
	r.calls = append(r.calls, "delete "+instance)
	r.mu.Unlock()
	return r.Provider.DeleteInstance(ctx, instance)
}

// Calls lists the creates and deletes in the order they were asked for:
// "create <name>", "delete <name or provider id>".
func (r *Recorder) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// Requests are the create requests made for instance name, oldest first.
func (r *Recorder) Requests(name string) []providers.CreateRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]providers.CreateRequest(nil), r.requests[name]...)
}

// ListInterrupted passes the question on to the provider it records, when
// that one can answer it (providers.InterruptionLister).
func (r *Recorder) ListInterrupted(ctx context.Context, poolID string) ([]providers.Instance, error) {
	if l, ok := r.Provider.(providers.InterruptionLister); ok {
		return l.ListInterrupted(ctx, poolID)
	}
	return nil, nil
}
