package sim

import (
	"context"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
)

// The spot breaker check: once a pool's breaker record is open, no create
// of that pool may ask for spot (CreateRequest.OnDemandOnly false) until
// it closes. A create decided in the same virtual instant as the trip is
// not held to it (the decision and the trip are then unordered); the
// engine's decision and its provider call are otherwise at one instant,
// since virtual time moves only in sleeps, and there are none between
// them.

// breakerWritten notes the moment a write opened (or extended) a pool's
// breaker.
func (w *world) breakerWritten(before, next *runner.SpotBreaker) {
	now := w.now()
	if !next.Open(now) || (before != nil && before.OpenUntil.Equal(next.OpenUntil)) {
		return
	}
	if w.breakerOpened == nil {
		w.breakerOpened = map[string]time.Time{}
	}
	if !before.Open(now) {
		w.breakerOpened[next.Pool] = now
		w.stats.inc("spot.breaker_opened")
	}
	w.tr.add("spot breaker of pool %s open until +%s", next.Pool, next.OpenUntil.Sub(w.tr.start).Round(time.Second))
}

// checkOnDemand is the check, at a create's arrival at the provider.
func (a *providerAPI) checkOnDemand(req providers.CreateRequest) {
	w := a.c.w
	if req.OnDemandOnly {
		w.stats.inc("provider.creates_on_demand_only")
	}
	p := a.p
	if p.dead || p.state.Store == nil {
		return
	}
	b, err := p.state.Store.GetSpotBreaker(context.Background(), a.pool)
	now := w.now()
	if err != nil || !b.Open(now) || req.OnDemandOnly {
		return
	}
	opened, ok := w.breakerOpened[a.pool]
	if !ok || !opened.Before(now) {
		return
	}
	w.violateAbout([]string{req.Name}, "no spot create while the pool's spot breaker is open", "create %s asked for spot at +%s; pool %s's breaker opened at +%s, open until +%s",
		req.Name, now.Sub(w.tr.start).Round(time.Millisecond), a.pool, opened.Sub(w.tr.start).Round(time.Millisecond), b.OpenUntil.Sub(w.tr.start).Round(time.Second))
}
