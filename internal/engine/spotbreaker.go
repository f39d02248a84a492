package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// SpotObserver is what a metrics observer implements to hear about spot
// interruptions (runfleet_spot_interruptions_total{pool}) and the breaker
// (runfleet_spot_breaker_open{pool}). It is optional: the engine asks the
// Observer for it and says nothing to one that does not implement it.
type SpotObserver interface {
	SpotInterrupted(pool string)
	SpotBreaker(pool string, open bool)
}

func (e *Engine) spotObserver() SpotObserver {
	o, _ := e.observer.(SpotObserver)
	return o
}

// breakerPolicy is the pool's spot breaker policy with defaults filled in.
func (e *Engine) breakerPolicy(pool string) runner.SpotBreakerPolicy {
	if p, ok := e.pool(pool); ok {
		return p.SpotBreaker.WithDefaults()
	}
	return runner.SpotBreakerPolicy{}.WithDefaults()
}

// countInterruption records one interruption of inst in its pool's
// breaker, once per instance however often the warning is delivered, and
// opens the breaker when the pool reaches the policy's count within its
// window.
func (e *Engine) countInterruption(ctx context.Context, log *slog.Logger, inst *runner.Instance, at time.Time) error {
	policy := e.breakerPolicy(inst.Pool)
	var tripped bool
	b, counted, err := compareAndSet("spot breaker of pool "+inst.Pool, nil,
		func() (*runner.SpotBreaker, error) { return e.store.GetSpotBreaker(ctx, inst.Pool) },
		func(cur *runner.SpotBreaker) (*runner.SpotBreaker, error) {
			next, trips, ok := cur.Record(policy, inst.Name, at, e.now())
			if !ok {
				return nil, errNoChange
			}
			tripped = trips
			return next, nil
		},
		func(_, next *runner.SpotBreaker) error { return e.store.PutSpotBreaker(ctx, next) })
	if err != nil {
		return fmt.Errorf("count the interruption in pool %s's spot breaker: %w", inst.Pool, err)
	}
	if !counted {
		return nil
	}
	if o := e.spotObserver(); o != nil {
		o.SpotInterrupted(inst.Pool)
		if tripped {
			o.SpotBreaker(inst.Pool, true)
		}
	}
	if tripped {
		e.memory.breakers.put(inst.Pool, b.OpenUntil, e.now())
		log.Warn("spot breaker open: the pool's machines are on-demand only until it closes",
			"interruptions", len(b.Recent), "window", policy.Window.String(), "open_until", b.OpenUntil)
	}
	return nil
}

// onDemandOnly reports whether the pool's spot breaker is open now. A
// breaker that cannot be read leaves spot on: the breaker saves money and
// trouble, and is no reason to refuse a create. The record is read at
// most once per breakerReadEvery per pool and process (breakerCache):
// reading it on every create would cost a store read per job (a DynamoDB
// GetItem on Lambda) for a state that changes a few times a day; another
// process's trip is seen that much later, this process's at once.
func (e *Engine) onDemandOnly(ctx context.Context, log *slog.Logger, pool string) bool {
	now := e.now()
	if openUntil, ok := e.memory.breakers.get(pool, now); ok {
		return now.Before(openUntil)
	}
	b, err := e.store.GetSpotBreaker(ctx, pool)
	if err != nil {
		log.Warn("spot breaker unreadable; creating as the pool is configured", "error", err)
		return false
	}
	var openUntil time.Time
	if b != nil {
		openUntil = b.OpenUntil
	}
	e.memory.breakers.put(pool, openUntil, now)
	return b.Open(now)
}

// breakerReadEvery bounds how stale a process's view of another process's
// breaker trip may be.
const breakerReadEvery = 30 * time.Second

// breakerCache keeps, per pool, until when its breaker was last read open
// and when that read was.
type breakerCache struct {
	mu    sync.Mutex
	pools map[string]breakerReading
}

type breakerReading struct {
	openUntil, readAt time.Time
}

func (c *breakerCache) get(pool string, now time.Time) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.pools[pool]
	if !ok || now.Sub(r.readAt) >= breakerReadEvery || now.Before(r.readAt) {
		return time.Time{}, false
	}
	return r.openUntil, true
}

func (c *breakerCache) put(pool string, openUntil, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pools == nil {
		c.pools = map[string]breakerReading{}
	}
	c.pools[pool] = breakerReading{openUntil: openUntil, readAt: now}
}

// reportBreakers tells the observer, once per reconcile pass, whether
// each pool's breaker is open: a breaker closes by time alone, with no
// write to report it.
func (e *Engine) reportBreakers(ctx context.Context) {
	o := e.spotObserver()
	if o == nil {
		return
	}
	for _, p := range e.pools {
		if b, err := e.store.GetSpotBreaker(ctx, p.Name); err == nil {
			o.SpotBreaker(p.Name, b.Open(e.now()))
		}
	}
}

// SpotInterrupted tells each observer that hears about spot.
func (m multiObserver) SpotInterrupted(pool string) {
	for _, o := range m {
		if s, ok := o.(SpotObserver); ok {
			s.SpotInterrupted(pool)
		}
	}
}

// SpotBreaker tells each observer that hears about spot.
func (m multiObserver) SpotBreaker(pool string, open bool) {
	for _, o := range m {
		if s, ok := o.(SpotObserver); ok {
			s.SpotBreaker(pool, open)
		}
	}
}

var _ SpotObserver = multiObserver(nil)
