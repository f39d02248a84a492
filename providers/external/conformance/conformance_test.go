package conformance_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/external"
	"github.com/runfleet/runfleet/providers/external/conformance"
	"github.com/runfleet/runfleet/providers/external/externaltest"
	"github.com/runfleet/runfleet/providers/simulated"
)

var fakeProvider string

func TestMain(m *testing.M) { externaltest.Main(m, &fakeProvider) }

// fake returns an external provider running the fake binary configured
// as cfg, and its state file.
func fake(t *testing.T, cfg externaltest.Config) (*external.Provider, string) {
	t.Helper()
	dir := t.TempDir()
	cfg.StateFile = filepath.Join(dir, "state.json")
	cfgPath := filepath.Join(dir, "provider.json")
	if err := cfg.Write(cfgPath); err != nil {
		t.Fatal(err)
	}
	s, err := external.ParseSettings(map[string]any{"provider_executable": fakeProvider, "config_file": cfgPath})
	if err != nil {
		t.Fatal(err)
	}
	p, err := external.New(s, external.Options{ControllerID: "ctl", PoolID: poolID, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return p, cfg.StateFile
}

// poolID is the pool's provider-side id in the tests' installation.
var poolID = runner.PoolID("installation-test", "pool")

var fast = conformance.Options{Pool: "pool", PoolID: poolID, Settle: 200 * time.Millisecond, PollInterval: 20 * time.Millisecond}

func results(r conformance.Report) string {
	var b strings.Builder
	for _, res := range r.Results {
		fmt.Fprintf(&b, "  %s %s: %s\n", res.Status, res.Check, res.Detail)
	}
	return b.String()
}

func find(t *testing.T, r conformance.Report, check string) conformance.Result {
	t.Helper()
	for _, res := range r.Results {
		if res.Check == check {
			return res
		}
	}
	t.Fatalf("no check %q in\n%s", check, results(r))
	return conformance.Result{}
}

func TestConformantProviderPassesEverything(t *testing.T) {
	// Slow enough that the 10ms probe must kill it.
	p, state := fake(t, externaltest.Config{Slow: map[string]string{"ListInstances": "100ms"}})
	r := conformance.Run(context.Background(), p, fast)
	if !r.OK() || r.Count(conformance.Pass) != 11 || len(r.Results) != 11 {
		t.Fatalf("report (leftovers %v):\n%s", r.Leftovers, results(r))
	}
	if res := find(t, r, "a call past its timeout is killed"); !strings.Contains(res.Detail, "killed") {
		t.Errorf("timeout probe: %+v; want the kill exercised", res)
	}
	if s, _ := externaltest.ReadState(state); len(s.Machines) != 0 {
		t.Errorf("machines left behind: %+v", s.Machines)
	}
}

func TestSimulatedProviderConforms(t *testing.T) {
	r := conformance.Run(context.Background(), simulated.NewWithOptions(simulated.Options{}), fast)
	if !r.OK() {
		t.Fatalf("report:\n%s", results(r))
	}
}

// TestProviderIgnoringDeleteByNameWarnsOfTheCost: runfleet survives such
// a provider (it lists the pool and deletes by provider id), so the check
// warns and says what it costs instead of failing.
func TestProviderIgnoringDeleteByNameWarnsOfTheCost(t *testing.T) {
	p, state := fake(t, externaltest.Config{IgnoreDeleteByName: true})
	r := conformance.Run(context.Background(), p, fast)
	if !r.OK() || r.Count(conformance.Warn) != 1 || r.Count(conformance.Pass) != 10 {
		t.Fatalf("want one warning and the rest passed:\n%s", results(r))
	}
	res := find(t, r, "DeleteInstance by name removes the machine")
	for _, want := range []string{"ignores deletes by name", "list the pool and delete the machine by provider id", "reconciler's next pass"} {
		if res.Status != conformance.Warn || !strings.Contains(res.Detail, want) {
			t.Errorf("delete by name: %+v; want a warning saying %q", res, want)
		}
	}
	// The clean-up deleted it by provider id.
	if s, _ := externaltest.ReadState(state); len(s.Machines) != 0 || len(r.Leftovers) != 0 {
		t.Errorf("machines left behind: %+v (reported %v)", s.Machines, r.Leftovers)
	}
}

func TestBrokenProviderFailuresAreListed(t *testing.T) {
	p, _ := fake(t, externaltest.Config{Status: "booting", Fail: map[string]int{"GetVersion": 1}})
	r := conformance.Run(context.Background(), p, fast)
	if r.OK() {
		t.Fatalf("a broken provider passed:\n%s", results(r))
	}
	if res := find(t, r, "CreateInstance makes a running machine"); res.Status != conformance.Fail || !strings.Contains(res.Detail, `status "booting"`) {
		t.Errorf("create: %+v", res)
	}
	if res := find(t, r, "GetVersion answers"); res.Status != conformance.Fail {
		t.Errorf("version: %+v", res)
	}
	if res := find(t, r, "ListInstances lists it"); res.Status != conformance.Skip {
		t.Errorf("list after a failed create: %+v, want skipped", res)
	}
}

// TestGetInstanceIsNotRequired: runfleet never calls GetInstance, so a
// provider that cannot answer it conforms, with a warning.
func TestGetInstanceIsNotRequired(t *testing.T) {
	p, _ := fake(t, externaltest.Config{Fail: map[string]int{"GetInstance": 1}})
	r := conformance.Run(context.Background(), p, fast)
	res := find(t, r, "GetInstance by provider id finds it")
	if !r.OK() || res.Status != conformance.Warn || !strings.Contains(res.Detail, "runfleet never calls GetInstance") {
		t.Fatalf("report:\n%s", results(r))
	}
}

// hangingList never answers a ListInstances until its context ends, and
// then not at once: a provider that would hold a worker.
type hangingList struct {
	providers.Provider
	overrun time.Duration
}

func (h hangingList) ListInstances(ctx context.Context, _ string) ([]providers.Instance, error) {
	<-ctx.Done()
	time.Sleep(h.overrun)
	return nil, ctx.Err()
}

func TestCallOverrunningItsTimeoutFails(t *testing.T) {
	opts := fast
	opts.ProbeGrace = 10 * time.Millisecond
	opts.CallTimeout = 50 * time.Millisecond
	r := conformance.Run(context.Background(), hangingList{Provider: simulated.NewWithOptions(simulated.Options{}), overrun: 100 * time.Millisecond}, opts)
	if res := find(t, r, "a call past its timeout is killed"); res.Status != conformance.Fail {
		t.Fatalf("probe: %+v\n%s", res, results(r))
	}
}
