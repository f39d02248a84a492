package sim

import (
	"context"
	"strings"
	"testing"
)

// lateReading is the real engine started as serve started it before O4
// was fixed: the work left in flight read by the recovery itself, beside
// the workers, so that the read also finds their fresh claims.
type lateReading struct{ engineController }

func (c lateReading) LeftInFlight(context.Context) (func(context.Context) error, error) {
	return c.e.RecoverAtStart, nil
}

func newLateReading(ctx context.Context, d Deps) (Controller, error) {
	ctl, err := NewEngine(ctx, d)
	if err != nil {
		return nil, err
	}
	return lateReading{ctl.(engineController)}, nil
}

// The simulation starts runfleet as serve does — the recovery beside the
// workers — and so catches a recovery that reads what is in flight too
// late (FINDINGS F26: a create retried under the worker still making its
// machine, two machines of one instance). Seeds 81 and 196 showed it at
// the engine of the fix, seed 131 after F22; later engine changes move it
// to other seeds, so the test tries those first and then looks through
// the fixed seeds until one does (about 1 in 100). It runs the
// single-process world with the workers the simulation had then
// (PlainWorker): with serve's workers — claims bounded by the visibility,
// failed messages repeated — no seed of the first 300 shows the two
// machines, and the replica seeds run no start-up recovery at all.
func TestInvariantsCatchARecoveryThatReadsLate(t *testing.T) {
	seeds := []uint64{131, 81, 196}
	for seed := uint64(1); seed <= 400; seed++ {
		seeds = append(seeds, seed)
	}
	for _, seed := range seeds {
		cfg := seedConfig(seed, 50)
		if cfg.Replicas > 1 {
			continue
		}
		cfg.PlainWorker = true
		res := Run(cfg, BoltBackend{Dir: t.TempDir()}, newLateReading)
		for _, v := range res.Violations {
			if strings.Contains(v.String(), "never two live machines for one instance") {
				t.Logf("seed %d: %s", seed, v)
				return
			}
		}
	}
	t.Fatal("no seed of 400 caught a recovery that reads what is in flight beside the workers")
}
