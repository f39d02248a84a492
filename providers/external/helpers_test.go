package external_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers/external"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// fakeProvider is the fake GARM provider binary, built once for all tests.
var fakeProvider string

func TestMain(m *testing.M) {
	if os.Getenv(heldCallConfig) != "" {
		os.Exit(holdProviderCall())
	}
	externaltest.Main(m, &fakeProvider)
}

const (
	testController = "ctl-test"
	testPool       = "pool-a"
)

// testPoolID is testPool's provider-side id in the tests' installation.
var testPoolID = runner.PoolID("installation-test", testPool)

// Environment of the helper process (this test binary, run again) that
// makes one provider call and is killed during it: the fake provider's
// executable and config file.
const (
	heldCallExecutable = "RUNFLEET_TEST_HELD_CALL_EXECUTABLE"
	heldCallConfig     = "RUNFLEET_TEST_HELD_CALL_CONFIG"
)

// holdProviderCall is the helper process: a runfleet stand-in that makes
// one CreateInstance, which the fake provider is configured to hang, so
// the test can kill this process in the middle of the call.
func holdProviderCall() int {
	s, err := external.ParseSettings(map[string]any{
		"provider_executable": os.Getenv(heldCallExecutable),
		"config_file":         os.Getenv(heldCallConfig),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	p, err := external.New(s, external.Options{ControllerID: testController, PoolID: testPoolID})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_, err = p.CreateInstance(context.Background(), createRequest("m-held"))
	fmt.Fprintln(os.Stderr, "the held call returned, and it never should:", err)
	return 1
}

// hostEnv is the "host" environment tests give providers, so what is
// passed through does not depend on the machine running the tests.
var hostEnv = []string{
	"PATH=/usr/bin:/bin",
	"HOME=/home/runfleet",
	"LANG=C.UTF-8",
	"AWS_REGION=eu-west-1",
	"AWS_SECRET_ACCESS_KEY=role-secret",
	"AWSCLI_FLAG=not-a-prefix-match",
	"MY_AWS_THING=not-a-prefix-match",
	"GARM_COMMAND=DeleteInstance",
	"GARM_POOL_ID=host-pool",
	"GARMISH=never",
	"http_proxy=http://proxy.internal:3128",
	"NO_PROXY=localhost,169.254.169.254",
}

// fixture is one fake provider with its own state, records and config.
type fixture struct {
	t        *testing.T
	dir      string
	cfgPath  string
	cfg      externaltest.Config
	provider *external.Provider
}

// newFixture configures a fake provider misbehaving as cfg says, under
// settings (provider_executable and config_file are filled in).
func newFixture(t *testing.T, cfg externaltest.Config, settings map[string]any) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{t: t, dir: dir, cfgPath: filepath.Join(dir, "provider.json")}
	cfg.StateFile = filepath.Join(dir, "state.json")
	cfg.RecordFile = filepath.Join(dir, "calls.jsonl")
	f.setConfig(cfg)
	all := map[string]any{"provider_executable": fakeProvider, "config_file": f.cfgPath}
	for k, v := range settings {
		all[k] = v
	}
	s, err := external.ParseSettings(all)
	if err != nil {
		t.Fatalf("settings: %v", err)
	}
	f.provider, err = external.New(s, external.Options{
		ControllerID: testController,
		PoolID:       testPoolID,
		Environ:      func() []string { return hostEnv },
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// setConfig changes how the fake provider behaves from its next call on.
func (f *fixture) setConfig(cfg externaltest.Config) {
	f.t.Helper()
	cfg.StateFile, cfg.RecordFile = filepath.Join(f.dir, "state.json"), filepath.Join(f.dir, "calls.jsonl")
	f.cfg = cfg
	if err := cfg.Write(f.cfgPath); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) records() []externaltest.Record {
	f.t.Helper()
	recs, err := externaltest.ReadRecords(f.cfg.RecordFile)
	if err != nil {
		f.t.Fatal(err)
	}
	return recs
}

func (f *fixture) lastRecord() externaltest.Record {
	f.t.Helper()
	recs := f.records()
	if len(recs) == 0 {
		f.t.Fatal("the provider was never called")
	}
	return recs[len(recs)-1]
}

func (f *fixture) machines() []externaltest.Machine {
	f.t.Helper()
	s, err := externaltest.ReadState(f.cfg.StateFile)
	if err != nil {
		f.t.Fatal(err)
	}
	return s.Machines
}
