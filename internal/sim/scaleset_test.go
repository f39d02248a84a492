package sim

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/testclock"
)

var (
	flagSSSeeds     = flag.Int("sseeds", 200, "how many seeds TestSimulationScaleSet runs")
	flagSSFirstSeed = flag.Uint64("ssfirstseed", 1, "the first seed TestSimulationScaleSet runs")
	flagSSJobs      = flag.Int("ssjobs", 30, "workflow jobs per TestSimulationScaleSet seed (about 40 % of them the scale set's)")
)

// minScaleSetServed is how many scale-set jobs the default run must see
// served by runners runfleet made in the scale set: fewer means the world
// no longer exercises the intake it is there for.
const minScaleSetServed = 1000

// ssSeedConfig is one TestSimulationScaleSet seed: TestSimulation's world
// for that seed, with the scale set and its pool beside the webhook pools.
func ssSeedConfig(seed uint64, jobs int) Config {
	cfg := seedConfig(seed, jobs)
	ss := DefaultScaleSet()
	cfg.ScaleSet = &ss
	return cfg
}

func ssReplayLine(seed uint64, jobs int) string {
	return fmt.Sprintf("go test ./internal/sim -run 'TestSimulationScaleSet$' -seed %d -ssjobs %d", seed, jobs) + deadWorkFlag()
}

// TestSimulationScaleSet runs worlds where a share of the jobs targets a
// runner scale set, which runfleet serves through the real listener
// (internal/listener under internal/leader's lease) against the simulated
// Actions service, beside the webhook pools; see doc.go. It fails if the
// run served fewer than minScaleSetServed scale-set jobs.
func TestSimulationScaleSet(t *testing.T) {
	seeds, jobs := *flagSSSeeds, *flagSSJobs
	if testing.Short() {
		seeds = 20
	}
	if *flagSeed != 0 {
		cfg := ssSeedConfig(*flagSeed, jobs)
		cfg.LogToTrace = true
		if *flagTrace {
			cfg.Echo = func(line string) { fmt.Println(line) }
		}
		r := Run(cfg, BoltBackend{Dir: t.TempDir()}, NewEngine)
		t.Logf("seed %d: %d job lifecycles (%d scale-set jobs served) over %s of virtual time; trace %s\n%s", *flagSeed, r.Lifecycles,
			r.Stats.Get("scaleset.jobs_served"), r.Virtual.Round(time.Second), r.Digest, r.Stats)
		if r.Failed() {
			t.Fatal(failureReportWith(r, ssReplayLine(*flagSeed, jobs)))
		}
		return
	}
	started := time.Now()
	results := runSeedsWith(t, *flagSSFirstSeed, seeds, jobs, ssSeedConfig)
	total := newStats()
	var failed []*Result
	lifecycles := 0
	for _, r := range results {
		total.Merge(r.Stats)
		lifecycles += r.Lifecycles
		if r.Failed() {
			failed = append(failed, r)
		}
	}
	served := total.Get("scaleset.jobs_served")
	t.Logf("%d seeds, %d job lifecycles, %d scale-set jobs (%d served by the scale set's runners), %d failing seeds, %s real time",
		len(results), lifecycles, total.Get("scaleset.jobs"), served, len(failed), time.Since(started).Round(time.Millisecond))
	t.Logf("figures:\n%s", total)
	if len(failed) > 0 {
		t.Logf("violations by invariant (seeds):\n%s", tally(failed))
	}
	for i, r := range failed {
		if i < 3 {
			t.Error(failureReportWith(r, ssReplayLine(r.Seed, jobs)))
			continue
		}
		t.Errorf("seed %d: %s\n  replay: %s", r.Seed, r.Violations[0], ssReplayLine(r.Seed, jobs))
	}
	if want := minScaleSetServed * seeds / 200; served < int64(want) {
		t.Errorf("the scale set's runners served %d jobs over %d seeds; want at least %d: the world no longer exercises the scale-set intake", served, seeds, want)
	}
}

// A scale-set world replays exactly, as the webhook ones do.
func TestSimulationScaleSetIsDeterministic(t *testing.T) {
	for _, seed := range []uint64{2, 10} {
		cfg := ssSeedConfig(seed, 20)
		a := Run(cfg, BoltBackend{Dir: t.TempDir()}, NewEngine)
		b := Run(cfg, BoltBackend{Dir: t.TempDir()}, NewEngine)
		if a.Digest != b.Digest {
			t.Errorf("seed %d ran two ways: traces %s and %s", seed, a.Digest, b.Digest)
		}
	}
}

// deaf is the engine without its intake port: its process never listens
// to the scale set.
type deaf struct{ Controller }

func newDeaf(ctx context.Context, d Deps) (Controller, error) {
	c, err := NewEngine(ctx, d)
	return deaf{c}, err
}

// The scale-set invariants must catch a runfleet that does not listen:
// its restarted process never polls, and the scale set's jobs are left
// queued.
func TestInvariantsCatchADeafScaleSetIntake(t *testing.T) {
	want := map[string]bool{"a restarted listener polls again soon after it can": false, "no job left queued in GitHub that runfleet could serve": false}
	for seed := uint64(1); seed <= 2; seed++ {
		for _, v := range Run(ssSeedConfig(seed, 20), BoltBackend{Dir: t.TempDir()}, newDeaf).Violations {
			if _, ok := want[v.Invariant]; ok {
				want[v.Invariant] = true
			}
		}
	}
	for inv, caught := range want {
		if !caught {
			t.Errorf("a runfleet that never listens did not break %q", inv)
		}
	}
}

// The pollers check must fire on a second poll while one is in flight
// (the lease makes the real listener poll alone, so no seed shows it).
func TestASecondPollerIsAViolation(t *testing.T) {
	clock := testclock.At(Epoch)
	w := &world{clock: clock, tr: newTrace(clock, 100), stats: newStats(), cfg: Config{TraceLines: 10}}
	s := newActionsService(w, DefaultScaleSet())
	first, second := &task{name: "listener-work", gen: 1}, &task{name: "listener-work", gen: 2}
	s.pollBegins(first, &process{w: w, gen: 1})
	s.pollEnds(first)
	s.pollBegins(second, &process{w: w, gen: 2})
	if len(w.violations) != 0 {
		t.Fatalf("polls one after the other: %v", w.violations)
	}
	s.pollBegins(first, &process{w: w, gen: 1})
	if len(w.violations) != 1 || w.violations[0].Invariant != "never two pollers for one scale set at once" {
		t.Fatalf("two polls at once: violations %v", w.violations)
	}
}
