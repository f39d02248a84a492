package ec2_test

import (
	"context"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers/ec2"
)

// TestExampleConfigBuildsItsProviders loads examples/ec2.yaml as `runfleet
// serve` does and builds every EC2 pool's provider, so the example's
// settings can never rot (the config package's example test leaves
// provider settings to their own packages).
func TestExampleConfigBuildsItsProviders(t *testing.T) {
	t.Setenv("RUNFLEET_WEBHOOK_SECRET", "example-webhook-secret")
	t.Setenv("RUNFLEET_API_TOKEN", "example-api-token")
	cfg, err := config.Load("../../examples/ec2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	built := 0
	for _, pool := range cfg.Pools {
		if pool.Provider.Type != ec2.Type {
			continue
		}
		settings, err := ec2.ParseSettings(pool.Provider.Settings)
		if err != nil {
			t.Fatalf("pool %s: %v", pool.Name, err)
		}
		owner := ec2.Ownership{ControllerID: cfg.ControllerID, PoolID: runner.PoolID("example", pool.Name)}
		if _, err := ec2.New(context.Background(), owner, settings); err != nil {
			t.Fatalf("pool %s: %v", pool.Name, err)
		}
		built++
	}
	if built != 2 {
		t.Fatalf("built %d EC2 providers, want the example's 2", built)
	}
}
