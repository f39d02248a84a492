package wiring

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/providers/external"
)

func TestExternalProviderIsBuiltFromPoolSettings(t *testing.T) {
	dir := t.TempDir()
	bin, cfgFile := filepath.Join(dir, "garm-provider-test"), filepath.Join(dir, "provider.toml")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
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
	provs, err := Providers(cfg)
	if _, ok := provs["garm"].(*external.Provider); !ok {
		t.Fatalf("pool garm got %T", provs["garm"])
	}
	if err == nil || !strings.Contains(err.Error(), `pools[1].provider.settings: pool "nobin": provider_executable:`) {
		t.Fatalf("err = %v; want the missing binary named by pool and key", err)
	}
}
