package externaltest_test

import (
	"context"
	"errors"
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
)

// binary is the fake provider, built once for the test binary: the tests
// run the real executable through runfleet's real external provider
// adapter.
var binary string

func TestMain(m *testing.M) { externaltest.Main(m, &binary) }

var poolID = runner.PoolID("installation-chaos-test", "chaos")

// provider returns runfleet's external adapter running the fake provider
// with the config c (paths filled in), and that config.
func provider(t *testing.T, c externaltest.Config) (*external.Provider, externaltest.Config) {
	t.Helper()
	dir := t.TempDir()
	c.StateFile, c.EventLog = filepath.Join(dir, "state.json"), filepath.Join(dir, "events.jsonl")
	path := filepath.Join(dir, "provider.json")
	if err := c.Write(path); err != nil {
		t.Fatal(err)
	}
	s, err := external.ParseSettings(map[string]any{"provider_executable": binary, "config_file": path, "timeout": "30s"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := external.New(s, external.Options{ControllerID: "chaos-test", PoolID: poolID, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return p, c
}

// The chaos run's configuration (a seed, duplicate names, an event log)
// conforms while its fault rates are zero.
func TestChaosConfigConformsWithFaultsOff(t *testing.T) {
	p, c := provider(t, externaltest.Config{Seed: 1, AllowDuplicateNames: true})
	r := conformance.Run(context.Background(), p, conformance.Options{
		Pool: "chaos", PoolID: poolID, Settle: 200 * time.Millisecond, PollInterval: 20 * time.Millisecond,
	})
	if !r.OK() || r.Count(conformance.Pass) != len(r.Results) {
		var b strings.Builder
		for _, res := range r.Results {
			fmt.Fprintf(&b, "  %s %s: %s\n", res.Status, res.Check, res.Detail)
		}
		t.Fatalf("runfleet's provider check does not pass (leftovers %v):\n%s", r.Leftovers, b.String())
	}
	s, err := c.Read()
	if err != nil || len(s.Machines) != 0 {
		t.Errorf("machines left: %v (err %v)", s.Machines, err)
	}
}

func TestIgnoredDeleteByNameIsWarned(t *testing.T) {
	p, _ := provider(t, externaltest.Config{Seed: 1, IgnoreDeleteByName: true})
	r := conformance.Run(context.Background(), p, conformance.Options{
		Pool: "chaos", PoolID: poolID, Settle: 200 * time.Millisecond, PollInterval: 20 * time.Millisecond,
	})
	if r.Count(conformance.Pass) == len(r.Results) {
		t.Fatal("a provider that ignores deletes by name passed every check")
	}
}

func createMachine(ctx context.Context, p *external.Provider, name string) (providers.Instance, error) {
	return p.CreateInstance(ctx, providers.CreateRequest{
		Name: name, Pool: "chaos", PoolID: poolID, Labels: []string{"self-hosted"},
		MetadataURL: "http://127.0.0.1:1/metadata/" + name, CallbackURL: "http://127.0.0.1:1/callbacks/" + name,
		InstanceToken: "token-" + name, JITConfigEnabled: true,
	})
}

func TestFailuresFailBeforeOrAfterMakingTheMachine(t *testing.T) {
	p, c := provider(t, externaltest.Config{Seed: 3, FailRate: 1})
	ctx := context.Background()
	for i := range 12 {
		if _, err := createMachine(ctx, p, fmt.Sprintf("runfleet-chaos-%d-1", i)); err == nil {
			t.Fatalf("create %d succeeded with fail_rate 1", i)
		}
	}
	s, err := c.Read()
	if err != nil {
		t.Fatal(err)
	}
	events, err := externaltest.ReadEvents(c.EventLog)
	if err != nil {
		t.Fatal(err)
	}
	h := externaltest.Replay(events)
	made, before, after := len(s.Machines), h.Faults["CreateInstance"][externaltest.FailBefore], h.Faults["CreateInstance"][externaltest.FailAfter]
	if before+after != 12 || made != after || before == 0 || after == 0 {
		t.Errorf("%d failed before, %d after, %d machines made; want both kinds and one machine per failure after", before, after, made)
	}
	for _, m := range s.Machines {
		if m.InstanceToken != "token-"+m.Instance.Name || !strings.HasSuffix(m.MetadataURL, m.Instance.Name) {
			t.Errorf("machine %s kept bootstrap data %q %q", m.Instance.Name, m.InstanceToken, m.MetadataURL)
		}
	}
}

func TestHangsAreKilledByTheCallersTimeout(t *testing.T) {
	p, c := provider(t, externaltest.Config{Seed: 5, HangRate: 1, HangFor: time.Hour})
	for i := range 4 {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err := createMachine(ctx, p, fmt.Sprintf("runfleet-chaos-%d-1", i))
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("create %d: %v; want the hung call killed at the deadline", i, err)
		}
	}
	events, err := externaltest.ReadEvents(c.EventLog)
	if err != nil {
		t.Fatal(err)
	}
	h := externaltest.Replay(events)
	if hangs := h.Faults["CreateInstance"][externaltest.HangBefore] + h.Faults["CreateInstance"][externaltest.HangAfter]; hangs != 4 {
		t.Errorf("%d hangs recorded, want 4", hangs)
	}
	// The cloud is not left locked by the killed calls.
	if err := c.Update(func(*externaltest.State) ([]externaltest.Event, error) { return nil, nil }); err != nil {
		t.Fatalf("the cloud stayed locked after its callers were killed: %v", err)
	}
}
