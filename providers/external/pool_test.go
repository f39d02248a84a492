package external_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/external"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// TestTwoInstallationsWithAPoolOfOneNameNeverSeeEachOthersMachines: staging
// and production each have a pool "linux" on one cloud account (one fake
// provider state). What staging makes is tagged with staging's pool id, so
// production's list (its reconciler's orphan scan) never shows it.
func TestTwoInstallationsWithAPoolOfOneNameNeverSeeEachOthersMachines(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := externaltest.Config{StateFile: filepath.Join(dir, "state.json"), RecordFile: filepath.Join(dir, "calls.jsonl")}
	cfgPath := filepath.Join(dir, "provider.json")
	if err := cfg.Write(cfgPath); err != nil {
		t.Fatal(err)
	}
	stagingID, productionID := runner.PoolID("staging", "linux"), runner.PoolID("production", "linux")
	staging := poolProvider(t, cfgPath, stagingID)
	production := poolProvider(t, cfgPath, productionID)

	req := createRequest("runfleet-linux-7-1")
	req.Pool, req.PoolID = "linux", stagingID
	made, err := staging.CreateInstance(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if list, err := production.ListInstances(ctx, productionID); err != nil || len(list) != 0 {
		t.Fatalf("production lists %+v, %v; want none of staging's machines", list, err)
	}
	if list, err := staging.ListInstances(ctx, stagingID); err != nil || len(list) != 1 || list[0].ProviderID != made.ProviderID {
		t.Fatalf("staging lists %+v, %v; want its machine", list, err)
	}
	recs, err := externaltest.ReadRecords(cfg.RecordFile)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{stagingID, productionID, stagingID} {
		if got := recs[i].Env["GARM_POOL_ID"]; got != want {
			t.Errorf("%s #%d: GARM_POOL_ID %q, want %q", recs[i].Command, i, got, want)
		}
	}
}

// TestCallsForAnotherPoolAreRefused: a provider serves the pool it was built
// for. A create or list naming another pool, or none, is a wiring mistake
// that would put machines where this provider's deletes never look: it is
// refused before the provider runs.
func TestCallsForAnotherPoolAreRefused(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, externaltest.Config{}, nil)
	for _, poolID := range []string{"", runner.PoolID("installation-test", "pool-b"), testPool} {
		req := createRequest("m-1")
		req.PoolID = poolID
		if _, err := f.provider.CreateInstance(ctx, req); !errors.Is(err, providers.ErrWrongPool) {
			t.Errorf("create for pool id %q = %v, want ErrWrongPool", poolID, err)
		}
		if _, err := f.provider.ListInstances(ctx, poolID); !errors.Is(err, providers.ErrWrongPool) {
			t.Errorf("list of pool id %q = %v, want ErrWrongPool", poolID, err)
		}
	}
	if recs, _ := externaltest.ReadRecords(f.cfg.RecordFile); len(recs) != 0 {
		t.Fatalf("the provider ran %d times", len(recs))
	}
}

func poolProvider(t *testing.T, cfgPath, poolID string) *external.Provider {
	t.Helper()
	s, err := external.ParseSettings(map[string]any{"provider_executable": fakeProvider, "config_file": cfgPath})
	if err != nil {
		t.Fatal(err)
	}
	p, err := external.New(s, external.Options{
		ControllerID: testController,
		PoolID:       poolID,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
