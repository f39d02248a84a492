package config_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/providers/simulated"
)

// TestExamplesValidate loads every example config the way `runfleet serve`
// does, including building each simulated pool's provider from its
// settings, so an example can never rot.
func TestExamplesValidate(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no examples found")
	}
	t.Setenv("RUNFLEET_WEBHOOK_SECRET", "example-webhook-secret")
	t.Setenv("RUNFLEET_API_TOKEN", "example-api-token")
	t.Setenv("RUNFLEET_PG_DSN", "postgres://runfleet:example@127.0.0.1:5432/runfleet")
	t.Setenv("RUNFLEET_GITHUB_TOKEN", "ghp_example")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := config.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.CheckProviderSettings(checkSimulated); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestLocalExampleHasTheTourPools(t *testing.T) {
	t.Setenv("RUNFLEET_WEBHOOK_SECRET", "example-webhook-secret")
	t.Setenv("RUNFLEET_API_TOKEN", "example-api-token")
	cfg, err := config.Load("../../examples/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.GitHub.Simulated || cfg.Webhook.SecretEnv != "RUNFLEET_WEBHOOK_SECRET" {
		t.Errorf("local.yaml must use simulated GitHub and the env secret: %v %v", cfg.GitHub, cfg.Webhook)
	}
	p, ok := cfg.Pool("linux-x64")
	if !ok || p.Name != "linux-x64" || p.MaxRunners != 10 {
		t.Errorf("linux job → %v, %t", p, ok)
	}
	broken, ok := cfg.Pool("always-fails")
	if !ok || broken.Name != "always-fails" {
		t.Fatalf("broken job → %v, %t", broken, ok)
	}
	opts, err := simulated.ParseSettings(broken.Provider.Settings)
	if err != nil {
		t.Fatal(err)
	}
	if !opts.Faults.AlwaysFailCreate || !opts.Faults.AlwaysFailDelete {
		t.Errorf("always-fails pool must fail creates and deletes: %+v", opts.Faults)
	}
}

func TestCheckProviderSettingsNamesThePool(t *testing.T) {
	cfg := &config.Config{Pools: []config.Pool{
		{Name: "ok", Provider: config.Provider{Type: "simulated"}},
		{Name: "bad", Provider: config.Provider{Type: "simulated", Settings: map[string]any{"failure_rate": 2}}},
	}}
	err := cfg.CheckProviderSettings(checkSimulated)
	assertMessages(t, err, "pools[1].provider.settings: simulated provider: failure_rate: want a probability between 0 and 1, got 2")
	if len(messages(t, err)) != 1 {
		t.Errorf("want one problem: %v", err)
	}
}

func checkSimulated(providerType string, settings map[string]any) error {
	switch providerType {
	case simulated.Type:
		_, err := simulated.New(settings)
		return err
	case "external", "ec2", "kubernetes":
		return nil // validated by their own packages' tests
	default:
		return errors.New(fmt.Sprint("unexpected provider type ", providerType))
	}
}
