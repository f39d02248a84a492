package engine_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/external"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// A GARM provider that answers "deleted" to a delete by name but leaves the
// machine running defeats every clean-up that only knows the name. The
// reconciler still finds the machine by listing the pool, once no live
// instance owns it, and deletes it by its provider id.
func TestReconcilerCatchesAProviderThatIgnoresDeleteByName(t *testing.T) {
	dir := t.TempDir()
	bin, err := externaltest.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile, stateFile := filepath.Join(dir, "provider.json"), filepath.Join(dir, "state.json")
	if err := (externaltest.Config{StateFile: stateFile, IgnoreDeleteByName: true}).Write(cfgFile); err != nil {
		t.Fatal(err)
	}
	ext, err := external.New(external.Settings{Executable: bin, ConfigFile: cfgFile, Timeout: 30 * time.Second},
		external.Options{ControllerID: testController, PoolID: testPool})
	if err != nil {
		t.Fatal(err)
	}
	clock := &movableClock{}
	h := newHarness(t, harnessOptions{
		now: clock.now, bootstrapTimeout: time.Minute, providerTimeout: time.Minute,
		wrap: func(providers.Provider) providers.Provider { return ext },
	})
	ctx := context.Background()

	// A worker made the machine and died before recording it.
	inst := putInState(t, h, 140_001, runner.StatusCreating)
	if _, err := ext.CreateInstance(ctx, providers.CreateRequest{Name: inst.Name, Pool: testPool}); err != nil {
		t.Fatal(err)
	}
	clock.advance(10 * time.Minute)
	if _, err := h.engine.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	h.startWorkers(2)
	// Every delete by name is "successful" yet removes nothing; every
	// retried create then meets the machine as a duplicate. The instance
	// runs out of create attempts and is deleted — with its machine left.
	h.waitStatus(inst.Name, runner.StatusDeleted)
	if s, err := externaltest.ReadState(stateFile); err != nil || len(s.Machines) != 1 {
		t.Fatalf("state: %+v, %v; want the one machine still running", s, err)
	}
	rep, err := h.engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OrphanMachinesDeleted != 1 {
		t.Fatalf("orphan machines deleted = %d, want 1", rep.OrphanMachinesDeleted)
	}
	if s, _ := externaltest.ReadState(stateFile); len(s.Machines) != 0 {
		t.Fatalf("machines left: %+v", s.Machines)
	}
}
