//go:build !runfleet_noec2

package wiring

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/ec2"
)

func TestProvidersBuildsEC2Pools(t *testing.T) {
	cfg := &config.Config{ControllerID: "ctl", Pools: []config.Pool{
		{Name: "x64", Provider: config.Provider{Type: "ec2", Settings: map[string]any{
			"region": "eu-west-1", "image_id": "ami-0abc", "instance_types": []any{"t3.large"},
		}}},
		{Name: "typo", Provider: config.Provider{Type: "ec2", Settings: map[string]any{
			"region": "eu-west-1", "image_id": "ami-0abc", "instance_type": "t3.large",
		}}},
	}}
	provs, err := Providers(cfg, "installation-1")
	p, ok := provs["x64"].(*ec2.Provider)
	if !ok {
		t.Fatalf("pool x64 got %T, want *ec2.Provider (err: %v)", provs["x64"], err)
	}
	if err == nil || !strings.Contains(err.Error(), `pools[1].provider.settings: pool "typo": ec2 provider: unknown setting instance_type`) {
		t.Fatalf("err = %v, want the unknown key named for pool typo", err)
	}
	// Refused before any AWS call: the provider serves the pool's id only.
	if _, err := p.ListInstances(context.Background(), "x64"); !errors.Is(err, providers.ErrWrongPool) {
		t.Errorf("list by the pool's name = %v, want ErrWrongPool", err)
	}
}
