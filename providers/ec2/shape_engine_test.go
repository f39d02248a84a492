package ec2_test

import (
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
)

// From a job's labels to the machine on EC2 (moto), through the engine:
// a job labelled runfleet/cpu=4 runs on the cheapest allowed type with at
// least 4 vCPUs, and a job asking beyond the pool's policy makes no EC2
// call at all.
func TestShapeLabelsThroughTheEngineToEC2(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s, _ := w.graviton()
	launches := &launchRecorder{}
	world := enginetest.NewWorld(t, enginetest.Options{
		Pools: enginetest.OnePool(func(p *runner.Pool) {
			p.Shapes = &runner.ShapePolicy{Families: []string{"c7g", "m7g"}, MaxCPU: 16, MaxMemoryGiB: 64}
		}),
		// The pool's provider-side id is the one this world's EC2 provider serves.
		InstallationID: w.installationID,
		WrapProvider: func(pool string, _ providers.Provider) providers.Provider {
			return w.provider(pool, s, launches.middleware)
		},
		Engine: func(o *engine.Options) {
			o.MetadataURL, o.CallbackURL = "https://control.example/metadata", "https://control.example/callbacks"
			o.InstanceToken = func(inst, _ string, attempt int, _ time.Duration) (string, error) {
				return "token-" + inst, nil
			}
		},
	})
	world.StartWorkers(1)

	shaped := enginetest.Event(runner.ActionQueued, 41_001, "")
	shaped.Labels = append(shaped.Labels, "runfleet/cpu=4")
	if out := world.Deliver(shaped); out.Result != engine.ResultCreated {
		t.Fatalf("shaped job: outcome %+v", out)
	}
	name := enginetest.InstanceName(41_001)
	world.WaitStatus(name, runner.StatusRunning)
	if live := w.live(name); len(live) != 1 || live[0].InstanceType != "c7g.xlarge" {
		t.Fatalf("machines for %s: %+v, want one c7g.xlarge", name, live)
	}

	greedy := enginetest.Event(runner.ActionQueued, 41_002, "")
	greedy.Labels = append(greedy.Labels, "runfleet/cpu=64")
	if out := world.Deliver(greedy); out.Result != engine.ResultRefused || out.Reason != runner.RefusedCPUOverLimit {
		t.Fatalf("greedy job: outcome %+v, want refused for cpu_over_limit", out)
	}
	world.Drain()
	if calls := launches.calls(); len(calls) != 1 {
		t.Fatalf("RunInstances calls %+v; want only the shaped job's", calls)
	}
	if live := w.live(enginetest.InstanceName(41_002)); len(live) != 0 {
		t.Fatalf("the refused job has machines: %v", ids(live))
	}
}
