package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/runfleet/runfleet/providers"
)

// ObserveProviders wraps each pool's provider so every call is counted by
// pool, operation and result and timed. Both modes build their providers
// through wiring, which applies it, so the figures mean the same thing in
// both.
func ObserveProviders(provs map[string]providers.Provider, rec Recorder) map[string]providers.Provider {
	if rec == nil || provs == nil {
		return provs
	}
	out := make(map[string]providers.Provider, len(provs))
	for pool, p := range provs {
		if r, ok := p.(Reporter); ok {
			r.ReportTo(rec)
		}
		if n, ok := p.(providers.FailoverNotifier); ok {
			n.NotifyFailovers(rec.CapacityFailover)
		}
		out[pool] = &ObservedProvider{next: p, pool: pool, rec: rec, now: time.Now}
	}
	return out
}

// Reporter is a provider with facts of its own to report (a job refused
// for its shape, a spot interruption, a capacity failover):
// ObserveProviders hands it the recorder, so it needs no wiring of its own.
type Reporter interface {
	ReportTo(rec Recorder)
}

// ObservedProvider is a provider whose calls are recorded.
type ObservedProvider struct {
	next providers.Provider
	pool string
	rec  Recorder
	now  func() time.Time
}

var _ providers.Provider = (*ObservedProvider)(nil)

// Unwrap returns the provider underneath, for a caller that needs an
// optional interface of it.
func (o *ObservedProvider) Unwrap() providers.Provider { return o.next }

// done records one call that started at start. "Not found" is an answer,
// not a failure: a delete of a machine already gone succeeded.
func (o *ObservedProvider) done(op string, start time.Time, err error) {
	if errors.Is(err, providers.ErrNotFound) {
		err = nil
	}
	o.rec.ProviderCalled(o.pool, op, err, o.now().Sub(start))
}

func (o *ObservedProvider) CreateInstance(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	start := o.now()
	inst, err := o.next.CreateInstance(ctx, req)
	failed := err
	if failed == nil && inst.Status == providers.StatusError {
		failed = errors.New(inst.Fault)
	}
	o.done(OpCreate, start, failed)
	return inst, err
}

func (o *ObservedProvider) DeleteInstance(ctx context.Context, instance string) error {
	start := o.now()
	err := o.next.DeleteInstance(ctx, instance)
	o.done(OpDelete, start, err)
	return err
}

func (o *ObservedProvider) GetInstance(ctx context.Context, instance string) (providers.Instance, error) {
	start := o.now()
	inst, err := o.next.GetInstance(ctx, instance)
	o.done(OpGet, start, err)
	return inst, err
}

func (o *ObservedProvider) ListInstances(ctx context.Context, poolID string) ([]providers.Instance, error) {
	start := o.now()
	list, err := o.next.ListInstances(ctx, poolID)
	o.done(OpList, start, err)
	return list, err
}

func (o *ObservedProvider) RemoveAllInstances(ctx context.Context) error {
	start := o.now()
	err := o.next.RemoveAllInstances(ctx)
	o.done(OpRemoveAll, start, err)
	return err
}

func (o *ObservedProvider) StartInstance(ctx context.Context, instance string) error {
	start := o.now()
	err := o.next.StartInstance(ctx, instance)
	o.done(OpStart, start, err)
	return err
}

func (o *ObservedProvider) StopInstance(ctx context.Context, instance string) error {
	start := o.now()
	err := o.next.StopInstance(ctx, instance)
	o.done(OpStop, start, err)
	return err
}
