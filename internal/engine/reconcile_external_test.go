package engine_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/external"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// A GARM provider that answers "deleted" to a delete by name but leaves the
// machine running defeats every clean-up that only knows the name. After a
// failed create the engine lists the pool and deletes what the create left
// by its provider id; and a machine whose record a delete by name ended is
// found by the reconciler, once no live instance owns it, and deleted by
// its provider id too.
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
	// The provider is made for the pool's id, so the installation id it
	// derives from is fixed here.
	const installation = "external-provider-test"
	poolID := runner.PoolID(installation, enginetest.Pool)
	ext, err := external.New(external.Settings{Executable: bin, ConfigFile: cfgFile, Timeout: 30 * time.Second},
		external.Options{ControllerID: enginetest.Controller, PoolID: poolID})
	if err != nil {
		t.Fatal(err)
	}
	clock := &testclock.Clock{}
	w := enginetest.NewWorld(t, enginetest.Options{
		Now: clock.Now, ProviderTimeout: time.Minute, InstallationID: installation,
		Pools:        enginetest.OnePool(func(p *runner.Pool) { p.BootstrapTimeout = time.Minute }),
		WrapProvider: func(string, providers.Provider) providers.Provider { return ext },
	})
	ctx := context.Background()
	makeMachine := func(name string) {
		t.Helper()
		if _, err := ext.CreateInstance(ctx, providers.CreateRequest{Name: name, Pool: enginetest.Pool, PoolID: poolID}); err != nil {
			t.Fatal(err)
		}
	}
	machines := func() []externaltest.Machine {
		t.Helper()
		s, err := externaltest.ReadState(stateFile)
		if err != nil {
			t.Fatal(err)
		}
		return s.Machines
	}

	// A worker made the machine and died before recording it.
	stuck := putInState(t, w, 140_001, runner.StatusCreating)
	makeMachine(stuck.Name)
	// Another, whose instance an operator force-deleted: the delete knows
	// only the machine's name.
	forced := putInState(t, w, 140_002, runner.StatusCreating)
	makeMachine(forced.Name)
	if _, err := w.Engine.ForceDelete(ctx, forced.Name); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Minute)
	if _, err := w.Engine.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	w.StartWorkers(2)
	running := w.WaitStatus(stuck.Name, runner.StatusRunning)
	w.WaitStatus(forced.Name, runner.StatusDeleted)
	// The forced delete knew only the name, which this provider ignores: it
	// listed the pool and deleted the machine by its id before the record
	// said deleted.
	if got := machines(); len(got) != 1 || got[0].Instance.ProviderID != running.ProviderID {
		t.Fatalf("machines %+v; want only the retried create's (%s)", got, running.ProviderID)
	}

	// A machine no record answers for (made by a process that died before
	// admitting anything) is the reconciler's to find, by listing.
	makeMachine(runner.InstanceName(enginetest.Pool, 140_003, 1))
	rep, err := w.Engine.Reconcile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OrphanMachinesDeleted != 1 {
		t.Fatalf("orphan machines deleted = %d, want 1", rep.OrphanMachinesDeleted)
	}
	if got := machines(); len(got) != 1 || got[0].Instance.ProviderID != running.ProviderID {
		t.Fatalf("machines left: %+v; want only %s's (%s)", got, stuck.Name, running.ProviderID)
	}
}
