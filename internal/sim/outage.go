package sim

import (
	"errors"
	"time"
)

// A store outage (issue #32) is the shared database restarting: for a
// window of virtual time every store and queue call of every process
// fails — the store is the queue's too (PostgreSQL's queue table, bolt's
// outbox) — and, with OutageFaults.LostCommit, a write may take effect
// and still fail, its answer lost with the connection. No process dies:
// each sees its calls fail, its workers do a failed message again while
// it is still theirs and then leave it for redelivery, and the store
// comes back by itself.

// errStoreDown is what every store and queue call answers during an
// outage, as a broken connection to the database would.
var errStoreDown = errors.New("sim: the store is unreachable (outage)")

// outage is the seed's outage window, if it has one.
type outage struct {
	from, until time.Time
}

// outageAfterglow is how long after an outage a worker may still give up
// work the outage failed: its repeats of a failed message (1+2+4+8 s)
// and a margin. Work given up then is counted as dead from the outage's
// start (deadwork.go).
const outageAfterglow = 20 * time.Second

// planOutage gives the seed its outage, at a random moment of the load
// phase. Only a shared store has one (a bolt file on the process's own
// disk does not go away by itself), and the generator is consulted only
// then, so every other seed runs as it always did.
func (w *world) planOutage(lastArrival time.Time) {
	f := w.cfg.StoreOutage
	if !w.sharedStore() || !chance(w.rng, f.Chance) {
		return
	}
	from := w.now().Add(between(w.rng, 0, lastArrival.Sub(w.now())))
	o := &outage{from: from, until: from.Add(between(w.rng, f.Min, f.Max))}
	w.outage = o
	w.sched.at(o.from, 0, func() {
		w.stats.inc("fault.store_outage")
		w.tr.add("=== store outage: every store and queue call fails for %s ===", o.until.Sub(o.from))
	})
	w.sched.at(o.until, 0, func() {
		w.tr.add("=== store back ===")
		// Workers that found the queue unreachable stopped; as a blocked
		// receive would, they try again now.
		w.pokeAll()
	})
}

// storeDown reports whether the store is unreachable now.
func (w *world) storeDown() bool {
	o := w.outage
	return o != nil && !w.now().Before(o.from) && w.now().Before(o.until)
}

// outageWrite plays out a write during an outage: it fails, after taking
// effect (LostCommit) or before. It reports whether fn ran and succeeded.
func (w *world) outageWrite(what string, fn func() error) (applied bool) {
	if chance(w.rng, w.cfg.StoreOutage.LostCommit) {
		err := fn()
		w.stats.inc("fault.store_outage.lost_commit")
		w.tr.add("store %s: took effect%s, answer lost (outage)", what, result(err))
		return err == nil
	}
	w.stats.inc("fault.store_outage.failed_write")
	w.tr.add("store %s: failed (outage)", what)
	return false
}

// deadSince is when work given up now became dead: the outage's start
// when the outage (or its afterglow) is why, else now.
func (w *world) deadSince() time.Time {
	if o := w.outage; o != nil && !w.now().Before(o.from) && w.now().Before(o.until.Add(outageAfterglow)) {
		return o.from
	}
	return w.now()
}
