package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/cmd/runfleet-chaos/internal/cloud"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/external"
	"github.com/runfleet/runfleet/providers/external/conformance"
)

// binary is the provider, built once for the test binary: the tests run
// the real executable through runfleet's real external provider adapter.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "runfleet-chaos-provider")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "chaos-provider")
	build := exec.Command("go", "build", "-o", binary, "github.com/runfleet/runfleet/cmd/runfleet-chaos/provider")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the chaos provider: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var poolID = runner.PoolID("installation-chaos-test", "chaos")

// provider returns runfleet's external adapter running the chaos provider
// with the cloud config c (paths filled in), and that config.
func provider(t *testing.T, c cloud.Config) (*external.Provider, cloud.Config) {
	t.Helper()
	dir := t.TempDir()
	c.StateFile, c.LockFile, c.EventLog = filepath.Join(dir, "state.json"), filepath.Join(dir, "state.lock"), filepath.Join(dir, "events.jsonl")
	path := filepath.Join(dir, "provider.json")
	if err := cloud.WriteConfig(path, c); err != nil {
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

func TestConformsWithFaultsOff(t *testing.T) {
	p, c := provider(t, cloud.Config{Seed: 1})
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
	p, _ := provider(t, cloud.Config{Seed: 1, IgnoreDeleteByName: true})
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
	p, c := provider(t, cloud.Config{Seed: 3, FailRate: 1})
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
	events, err := cloud.ReadEvents(c.EventLog)
	if err != nil {
		t.Fatal(err)
	}
	h := cloud.Replay(events)
	made, before, after := len(s.Machines), h.Faults["CreateInstance"][cloud.FailBefore], h.Faults["CreateInstance"][cloud.FailAfter]
	if before+after != 12 || made != after || before == 0 || after == 0 {
		t.Errorf("%d failed before, %d after, %d machines made; want both kinds and one machine per failure after", before, after, made)
	}
	for _, m := range s.Machines {
		if m.InstanceToken != "token-"+m.Name || !strings.HasSuffix(m.MetadataURL, m.Name) {
			t.Errorf("machine %s kept bootstrap data %q %q", m.Name, m.InstanceToken, m.MetadataURL)
		}
	}
}

func TestHangsAreKilledByTheCallersTimeout(t *testing.T) {
	p, c := provider(t, cloud.Config{Seed: 5, HangRate: 1, HangFor: time.Hour})
	for i := range 4 {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err := createMachine(ctx, p, fmt.Sprintf("runfleet-chaos-%d-1", i))
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("create %d: %v; want the hung call killed at the deadline", i, err)
		}
	}
	events, err := cloud.ReadEvents(c.EventLog)
	if err != nil {
		t.Fatal(err)
	}
	h := cloud.Replay(events)
	if hangs := h.Faults["CreateInstance"][cloud.HangBefore] + h.Faults["CreateInstance"][cloud.HangAfter]; hangs != 4 {
		t.Errorf("%d hangs recorded, want 4", hangs)
	}
	// The cloud is not left locked by the killed calls.
	if err := c.Update(func(*cloud.State) []cloud.Event { return nil }); err != nil {
		t.Fatalf("the cloud stayed locked after its callers were killed: %v", err)
	}
}
