package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

// Found by TestSimulationScaleSet (F22; nothing in it is a scale set's):
// create attempt 1 failed after hanging, and still owned the instance's
// name when its clean-up began; its delete by name then took long, the
// reconciler gave up on the attempt meanwhile and attempt 2 made its
// machine, whose runner took a job — and attempt 1's clean-up, back from
// its delete, listed the pool and swept every machine of the name: the
// later one, under its job. The clean-up asks again, before each step by
// name, whether the attempt still owns the name.
func TestFailedCreateCleanUpStopsOnceTheAttemptIsSuperseded(t *testing.T) {
	var w *enginetest.World
	slow := &slowDelete{}
	w = enginetest.NewWorld(t, enginetest.Options{WrapProvider: func(_ string, p providers.Provider) providers.Provider {
		slow.Provider = p
		return slow
	}})
	w.Provider.SetFaults(simulated.Faults{AlwaysFailCreate: true})
	w.Deliver(enginetest.Event(runner.ActionQueued, 3901, ""))
	name := enginetest.InstanceName(3901)
	var later providers.Instance
	// While attempt 1's delete by name is on its way, the reconciler
	// gives up on the attempt and attempt 2 makes its machine, whose
	// runner runs a job.
	slow.during = func() {
		w.Provider.SetFaults(simulated.Faults{})
		var err error
		later, err = w.Provider.CreateInstance(context.Background(), providers.CreateRequest{Name: name, Pool: enginetest.Pool, PoolID: w.PoolID(enginetest.Pool), Labels: enginetest.Labels()})
		if err != nil {
			t.Error(err)
			return
		}
		if err := rewrite(w, name, func(next *runner.Instance) {
			next.CreateAttempt, next.ProviderID, next.RunnerStatus, next.ActiveJobID = 2, later.ProviderID, runner.RunnerActive, 3902
		}); err != nil {
			t.Error(err)
		}
	}
	create, err := engine.EncodeMessage(engine.Message{Kind: engine.KindCreate, Instance: name, JobID: 3901})
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Engine.HandleMessage(context.Background(), create)
	if later.ProviderID == "" {
		t.Fatal("attempt 1's clean-up never deleted by name")
	}
	for _, m := range w.Provider.Machines() {
		if m.ProviderID == later.ProviderID {
			return
		}
	}
	t.Fatalf("attempt 2's machine %s was swept by attempt 1's clean-up; machines: %+v", later.ProviderID, w.Provider.Machines())
}

// slowDelete runs during in place of its first delete by name, which then
// fails as one that timed out would.
type slowDelete struct {
	providers.Provider
	during func()
	once   sync.Once
}

func (s *slowDelete) DeleteInstance(ctx context.Context, target string) error {
	first := false
	s.once.Do(func() { first = true })
	if first && s.during != nil {
		s.during()
		return errors.New("delete: no answer in time")
	}
	return s.Provider.DeleteInstance(ctx, target)
}
