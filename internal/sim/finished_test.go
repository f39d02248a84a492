package sim

import (
	"context"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
)

// placeless is the engine as it was before issue #36, seen from the
// listener: the scale-set events reach the ledger without their place in
// the queue or their assignment time, so a late copy of a JobAssigned
// cannot be told from a re-assignment.
type placeless struct{ in engine.JobEventHandler }

func (p placeless) HandleJobEvent(ctx context.Context, ev runner.JobEvent, meta engine.EventMeta) (engine.Outcome, error) {
	ev.Seq, ev.AssignedAt = runner.MessageSeq{}, time.Time{}
	return p.in.HandleJobEvent(ctx, ev, meta)
}

// forgetful is a Controller whose listener feeds the ledger placeless
// events. Only its intake is the point: the wrapper hides the engine's
// other ports, which the check below does not look at.
type forgetful struct {
	Controller
	in engine.JobEventHandler
}

func (f forgetful) Intake() engine.JobEventHandler { return placeless{f.in} }

func newForgetful(ctx context.Context, d Deps) (Controller, error) {
	c, err := NewEngine(ctx, d)
	if err != nil {
		return nil, err
	}
	return forgetful{Controller: c, in: c.(Intaker).Intake()}, nil
}

// The new invariant must catch what issue #36 reported: with late
// duplicates and jobs canceled while assigned, a ledger that cannot tell
// a late copy from news reopens finished jobs and makes machines for
// them.
func TestInvariantsCatchMachinesForFinishedJobs(t *testing.T) {
	const invariant = "no machine is made for a job GitHub has finished"
	caught := 0
	for seed := uint64(1); seed <= 12 && caught == 0; seed++ {
		cfg := ssSeedConfig(seed, 30)
		cfg.ScaleSet.Faults.LateDuplicate, cfg.ScaleSet.Faults.CancelAssigned = 0.3, 0.3
		for _, v := range Run(cfg, BoltBackend{Dir: t.TempDir()}, newForgetful).Violations {
			if v.Invariant == invariant {
				caught++
			}
		}
		// The same world on the engine as it is breaks nothing of it.
		for _, v := range Run(cfg, BoltBackend{Dir: t.TempDir()}, NewEngine).Violations {
			if v.Invariant == invariant {
				t.Errorf("seed %d: the engine broke %q: %s", seed, invariant, v)
			}
		}
	}
	if caught == 0 {
		t.Fatalf("a ledger that cannot tell late copies from news never broke %q", invariant)
	}
}
