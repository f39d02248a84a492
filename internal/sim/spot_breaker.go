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
// them. On a shared store another replica's trip is held to it only
// breakerStaleness later.

// breakerStaleness is how late a replica may see another replica's trip:
// the engine reads the breaker record at most every 30 s per pool and
// process (engine.breakerReadEvery), and its own trip at once.
const breakerStaleness = 30 * time.Second

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
		if w.breakerOpenedBy == nil {
			w.breakerOpenedBy = map[string]int{}
		}
		w.breakerOpenedBy[next.Pool] = w.currentGen()
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
	if w.sharedStore() && w.breakerOpenedBy[a.pool] != p.gen && now.Sub(opened) < breakerStaleness {
		// Another replica's trip: the engine reads the record at most
		// every breakerStaleness (engine.breakerReadEvery).
		w.stats.inc("spot.create_within_another_replicas_trip_staleness")
		return
	}
	w.violateAbout([]string{req.Name}, "no spot create while the pool's spot breaker is open", "create %s asked for spot at +%s; pool %s's breaker opened at +%s, open until +%s",
		req.Name, now.Sub(w.tr.start).Round(time.Millisecond), a.pool, opened.Sub(w.tr.start).Round(time.Millisecond), b.OpenUntil.Sub(w.tr.start).Round(time.Second))
}
