package sim

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
)

// staleRedelivery is the engine as issue #32 found it after a database
// restart: a create or delete message delivered again (its first
// delivery's worker died, or could not record its outcome) is dropped as
// stale, so only the reconciler's timeouts move its instance on; and no
// scan of dead work (it hides TakeOverDeadWork), which came after.
type staleRedelivery struct{ Controller }

func (s staleRedelivery) HandleMessage(ctx context.Context, id string, receive int, body []byte) (bool, error) {
	if receive > 1 && messageInstance(body) != "" {
		return true, nil
	}
	return s.Controller.HandleMessage(ctx, id, receive, body)
}

// noTakeover is the engine without the replicas' scan of dead work
// (TakeOverDeadWork hidden): a dead replica's work waits for its
// message's redelivery (the visibility timeout, 5 min), as before issue
// #32's liveness.
type noTakeover struct{ Controller }

// wrapped is the engine built by NewEngine, wrapped.
func wrapped(wrap func(Controller) Controller) NewController {
	return func(ctx context.Context, d Deps) (Controller, error) {
		c, err := NewEngine(ctx, d)
		if err != nil {
			return nil, err
		}
		return wrap(c), nil
	}
}

// The dead-work invariant fails a run, rather than counting, and its
// bound is the one liveness meets: replicas that die between two writes
// of a worker, on an engine that drops the redelivered message (what #32
// saw after a database restart) or that never scans for dead work (its
// takeover regressed), leave instances in creating or deleting past
// deadWorkBound within the first replica seeds. The same seeds on the
// engine as it is break nothing of it.
func TestInvariantsCatchDeadWork(t *testing.T) {
	const invariant = "capacity held by dead work moves on within its bound"
	broken := map[string]NewController{
		"stale redelivery": wrapped(func(c Controller) Controller { return staleRedelivery{c} }),
		"no takeover":      wrapped(func(c Controller) Controller { return noTakeover{c} }),
	}
	passed := map[uint64]bool{}
	for _, name := range []string{"stale redelivery", "no takeover"} {
		caught := 0
		for seed := uint64(3); seed <= 60 && caught == 0; seed += 6 {
			cfg := seedConfig(seed, 30)
			for _, v := range Run(cfg, BoltBackend{Dir: t.TempDir()}, broken[name]).Violations {
				if v.Invariant == invariant {
					caught++
					t.Logf("%s, seed %d: %s", name, seed, v)
				}
			}
			if passed[seed] {
				continue
			}
			passed[seed] = true
			for _, v := range Run(cfg, BoltBackend{Dir: t.TempDir()}, NewEngine).Violations {
				if v.Invariant == invariant {
					t.Errorf("seed %d: the engine broke %q: %s", seed, invariant, v)
				}
			}
		}
		if caught == 0 {
			t.Errorf("an engine with %s never broke %q within %s", name, invariant, liveDeadWorkBound)
		}
	}
}

// deadWorkLedger is a world with only the dead-work bookkeeping: who holds
// which instance, and what is dead.
func deadWorkLedger() *world {
	clock := testclock.At(Epoch)
	rng := rand.New(rand.NewPCG(1, 2))
	return &world{
		cfg:    Config{DeadWorkBound: liveDeadWorkBound},
		clock:  clock,
		rng:    rng,
		sched:  newScheduler(clock, rng),
		tr:     newTrace(clock, traceRing),
		stats:  newStats(),
		holds:  map[string]held{},
		dead:   map[string]deadWork{},
		inHand: map[*task]string{},
		takers: map[*task]bool{},
	}
}

// as runs fn as task t, at the message that names instance name.
func (w *world) as(t *task, name string, fn func()) {
	w.sched.current, w.inHand[t] = t, name
	fn()
	w.sched.current = nil
}

// A create that lost its instance to an operator's delete notes the
// machine it made on the deleting record, under the delete's claim, and
// ends. The delete is still at work (its provider call may hang to the
// provider's timeout), so nothing is dead: seed 7301187 of the explored
// window was failed for it, the create's write having made the create the
// work's holder. Once the delete's worker lets go, the work is dead; and a
// note under a dead claim moves nothing on, where a redelivery that claims
// the instance anew does.
func TestDeadWorkFollowsTheClaimNotTheLastWriter(t *testing.T) {
	const name, claim = "runfleet-gpu-1023-1-r2", "106#1@sim-gen-6"
	w := deadWorkLedger()
	create, del, again := &task{name: "create"}, &task{name: "delete"}, &task{name: "delete again"}

	w.as(del, name, func() { w.wroteInstance(name, runner.StatusPendingForceDelete, runner.StatusDeleting, claim) })
	w.as(create, name, func() {
		w.wroteInstance(name, runner.StatusDeleting, runner.StatusDeleting, claim)
		w.abandonTask("message 101 done")
	})
	if d, ok := w.dead[name]; ok {
		t.Fatalf("the delete still holds %s, yet its work is dead: %+v", name, d)
	}
	if h := w.holds[name]; h.t != del {
		t.Fatalf("%s is held by %v, want the delete", name, h.t)
	}

	w.as(del, name, func() { w.abandonTask("message 106 left for redelivery") })
	if _, ok := w.dead[name]; !ok {
		t.Fatalf("the delete let %s go and its work is not dead", name)
	}
	w.as(create, name, func() { w.wroteInstance(name, runner.StatusDeleting, runner.StatusDeleting, claim) })
	if _, ok := w.dead[name]; !ok {
		t.Fatalf("a note under the dead claim moved %s's dead work on", name)
	}
	w.as(again, name, func() { w.wroteInstance(name, runner.StatusDeleting, runner.StatusDeleting, "106#2@sim-gen-7") })
	if _, ok := w.dead[name]; ok {
		t.Fatalf("a redelivery's new claim did not move %s's dead work on", name)
	}
	if h := w.holds[name]; h.t != again {
		t.Fatalf("%s is held by %v, want the redelivery's worker", name, h.t)
	}
}
