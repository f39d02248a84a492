package wiring

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/external"
)

func TestExternalProviderIsBuiltFromPoolSettings(t *testing.T) {
	dir := t.TempDir()
	bin, cfgFile := filepath.Join(dir, "garm-provider-test"), filepath.Join(dir, "provider.toml")
	poolIDFile := filepath.Join(dir, "pool-id")
	// Only shell built-ins: the provider's environment has no PATH.
	script := "#!/bin/sh\necho \"$GARM_POOL_ID\" > '" + poolIDFile + "'\necho null\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{ControllerID: "ctl", Pools: []config.Pool{
		{Name: "garm", Provider: config.Provider{Type: external.Type, Settings: map[string]any{
			"provider_executable": bin, "config_file": cfgFile, "environment_passthrough": []any{"AWS_"},
		}}},
		{Name: "nobin", Provider: config.Provider{Type: external.Type, Settings: map[string]any{
			"provider_executable": filepath.Join(dir, "missing"), "config_file": cfgFile,
		}}},
	}}
	provs, err := Providers(cfg, "installation-1")
	p, ok := provs["garm"].(*external.Provider)
	if !ok {
		t.Fatalf("pool garm got %T", provs["garm"])
	}
	if err == nil || !strings.Contains(err.Error(), `pools[1].provider.settings: pool "nobin": provider_executable:`) {
		t.Fatalf("err = %v; want the missing binary named by pool and key", err)
	}

	// The provider is the pool's, under its provider-side id, never its name.
	ctx := context.Background()
	if _, err := p.ListInstances(ctx, "garm"); !errors.Is(err, providers.ErrWrongPool) {
		t.Errorf("list by the pool's name = %v, want ErrWrongPool", err)
	}
	poolID := runner.PoolID("installation-1", "garm")
	if _, err := p.ListInstances(ctx, poolID); err != nil {
		t.Fatalf("list by the pool's id: %v", err)
	}
	if sent, err := os.ReadFile(poolIDFile); err != nil || strings.TrimSpace(string(sent)) != poolID {
		t.Errorf("GARM_POOL_ID = %q (%v), want %s", sent, err, poolID)
	}
}
