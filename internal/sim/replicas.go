package sim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/runfleet/runfleet/internal/store"
)

// Replicas (issue #32): several `serve` replicas over one shared store and
// queue, as on PostgreSQL. The primary (w.proc) takes the webhooks, runs
// the reconcile passes (it holds the reconciler lease), the operator and
// the listener, and its queue workers; every other replica runs queue
// workers only, each over its own engine built by newController, as a
// process of its own. The state is opened once and outlives every
// process: a replica dies (at a store or queue write, before or after it,
// or during a provider call — abruptly, never by a shutdown) with only
// its own tasks; the messages its workers held come back when their
// visibility runs out, as SQS's and the PostgreSQL queue's do; the others
// carry on. A dead replica is restarted 1–10 s later, and no start reads
// the work left in flight (serve does so only on a store it owns alone:
// on a shared one, another replica may be at it).

// sharedStore reports whether this world runs replicas over a shared
// store.
func (w *world) sharedStore() bool { return w.cfg.Replicas > 1 }

// openState is the state a starting process works on: the shared one
// (opened at the first start), or its own.
func (w *world) openState() (State, error) {
	if !w.sharedStore() {
		return w.backend.Open(w.clock)
	}
	if w.shared == nil {
		st, err := w.backend.Open(w.clock)
		if err != nil {
			return State{}, err
		}
		w.shared = &st
	}
	return *w.shared, nil
}

// openStore is the store as it stands, for the checks: nil while no
// process has it open.
func (w *world) openStore() store.Store {
	if w.shared != nil {
		return w.shared.Store
	}
	if p := w.proc; p != nil && !p.buried && p.state.Store != nil {
		return p.state.Store
	}
	return nil
}

// newGen names the next process.
func (w *world) newGen() int {
	w.lastGen++
	return w.lastGen
}

// alive lists the live processes, oldest first.
func (w *world) alive() []*process {
	var out []*process
	for _, gen := range slices.Sorted(maps.Keys(w.procs)) {
		if p := w.procs[gen]; !p.dead {
			out = append(out, p)
		}
	}
	return out
}

// pokeAll wakes the idle workers of every live process: something became
// visible in the queue they share.
func (w *world) pokeAll() {
	for _, p := range w.alive() {
		p.pokeWorkers()
	}
}

// wakeAt pokes the workers that may take what becomes visible at t: the
// process's own, or, on a shared queue, every replica's (whichever are
// alive then).
func (w *world) wakeAt(p *process, t time.Time) {
	if !w.sharedStore() {
		p.wakeAt(t)
		return
	}
	w.sched.at(t, 0, w.pokeAll)
}

// startReplicas starts the worker replicas that are not running, once the
// primary is up the first time.
func (w *world) startReplicas() {
	if !w.sharedStore() || w.replicasStarted {
		return
	}
	w.replicasStarted = true
	for i := 2; i <= w.cfg.Replicas; i++ {
		w.startReplica(i)
	}
}

// startReplica starts worker replica i over the shared state.
func (w *world) startReplica(i int) {
	p := &process{w: w, gen: w.newGen(), replica: i, state: *w.shared}
	w.procs[p.gen] = p
	storeIface, sp := wrapStore(p.state.Store, p)
	p.store = sp
	p.queue = &queuePort{Queue: p.state.Queue, p: p}
	deps := w.deps(p, storeIface)
	w.tr.add("replica %d (gen %d) starting", i, p.gen)
	p.startLiveness()
	p.spawn(fmt.Sprintf("r%d-start", i), func(ctx context.Context) {
		ctl, err := w.newController(ctx, deps)
		if p.dead {
			return
		}
		if err != nil {
			p.die(fmt.Sprintf("replica %d's start failed, the process exits: %v", i, err))
			return
		}
		p.ctl, p.up = ctl, true
		w.tr.add("replica %d (gen %d) up", i, p.gen)
		p.pokeWorkers()
	})
}

// buryDead buries every process that died during the step, oldest first.
func (w *world) buryDead() {
	for _, gen := range slices.Sorted(maps.Keys(w.procs)) {
		if p := w.procs[gen]; p.dead && !p.buried {
			w.bury(p)
		}
	}
}

// currentGen is the process of the task that has the turn (the primary's
// between turns).
func (w *world) currentGen() int {
	if t := w.sched.current; t != nil && t.gen > 0 {
		return t.gen
	}
	return w.proc.gen
}
