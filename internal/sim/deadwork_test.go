package sim

import (
	"context"
	"testing"
)

// staleRedelivery is the engine as issue #32 found it after a database
// restart: a create or delete message delivered again (its first
// delivery's worker died, or could not record its outcome) is dropped as
// stale, so only the reconciler's timeouts move its instance on.
type staleRedelivery struct{ Controller }

func (s staleRedelivery) HandleMessage(ctx context.Context, id string, receive int, body []byte) (bool, error) {
	if receive > 1 && messageInstance(body) != "" {
		return true, nil
	}
	return s.Controller.HandleMessage(ctx, id, receive, body)
}

func newStaleRedelivery(ctx context.Context, d Deps) (Controller, error) {
	c, err := NewEngine(ctx, d)
	if err != nil {
		return nil, err
	}
	return staleRedelivery{c}, nil
}

// The dead-work invariant fails a run, rather than counting: replicas
// that die between two writes of a worker, on an engine that drops the
// redelivered message, leave creating instances to the reconciler's
// creating timeout (bootstrap 10 min + grace), past deadWorkBound. The
// same seeds on the engine as it is break nothing of it.
func TestInvariantsCatchDeadWork(t *testing.T) {
	const invariant = "capacity held by dead work moves on within its bound"
	caught := 0
	for seed := uint64(3); seed <= 60 && caught == 0; seed += 6 {
		cfg := seedConfig(seed, 30)
		for _, v := range Run(cfg, BoltBackend{Dir: t.TempDir()}, newStaleRedelivery).Violations {
			if v.Invariant == invariant {
				caught++
				t.Logf("seed %d: %s", seed, v)
			}
		}
		for _, v := range Run(cfg, BoltBackend{Dir: t.TempDir()}, NewEngine).Violations {
			if v.Invariant == invariant {
				t.Errorf("seed %d: the engine broke %q: %s", seed, invariant, v)
			}
		}
	}
	if caught == 0 {
		t.Fatalf("an engine that drops redelivered work never broke %q", invariant)
	}
}
