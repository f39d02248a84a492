package metrics

import (
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// Recorder hears every event the vocabulary counts. Embedded mode's
// implementation is promexport.Recorder, the Lambda functions' is EMF. Its
// methods are called on hot paths: each must be cheap and never block.
type Recorder interface {
	engine.Observer
	// Webhook counts one delivery; the values are normalised (Known).
	Webhook(event, action, result string)
	// ProviderCalled counts one provider call of pool and how long it took.
	ProviderCalled(pool, op string, err error, took time.Duration)
	// ReconcileResult counts a finished pass as ok or error. The engine's
	// ReconcilePassed carries no error; the caller of Reconcile has it.
	ReconcileResult(err error)
	// JobRefused: a job of pool got no machine, for reason (RefusalReasons).
	JobRefused(pool, reason string)
	// SpotInterrupted: a spot machine of pool was warned of interruption.
	SpotInterrupted(pool string)
	// SpotBreaker: pool's spot circuit breaker opened or closed.
	SpotBreaker(pool string, open bool)
	// CapacityFailover: a create of pool moved on, for reason
	// (FailoverReasons).
	CapacityFailover(pool, reason string)
	// ListenerListening, ListenerPolled and ListenerSessionConflict are
	// listener.Observer's: a scale-set listener of pool took its lease,
	// had a poll answered, met a 409 creating its session. This package
	// cannot name listener.Observer (the listener links GitHub's client);
	// the same method names let a Recorder be one.
	ListenerListening(pool string)
	ListenerPolled(pool string)
	ListenerSessionConflict(pool string)
}

// Nop records nothing.
type Nop struct{ engine.NopObserver }

func (Nop) Webhook(string, string, string)                      {}
func (Nop) ProviderCalled(string, string, error, time.Duration) {}
func (Nop) ReconcileResult(error)                               {}
func (Nop) JobRefused(string, string)                           {}
func (Nop) SpotInterrupted(string)                              {}
func (Nop) SpotBreaker(string, bool)                            {}
func (Nop) CapacityFailover(string, string)                     {}
func (Nop) ListenerListening(string)                            {}
func (Nop) ListenerPolled(string)                               {}
func (Nop) ListenerSessionConflict(string)                      {}

var _ Recorder = Nop{}

// PassResult is the result label of a reconcile pass that ended with err.
func PassResult(err error) string {
	if err != nil {
		return ResultError
	}
	return ResultOK
}

// DeletedCost is the cost a status change adds to runfleet_cost_dollars_total:
// the known, non-zero cost of an instance that is now deleted.
func DeletedCost(inst *runner.Instance) (float64, bool) {
	if inst == nil || inst.Status != runner.StatusDeleted || !inst.Cost.Known() || inst.Cost.USD <= 0 {
		return 0, false
	}
	return inst.Cost.USD, true
}
