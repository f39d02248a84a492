package sim

import (
	"context"
	"testing"
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
