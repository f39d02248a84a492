package external_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/providers/external"
)

func TestParseSettingsDefaults(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "provider.toml")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := external.ParseSettings(map[string]any{"provider_executable": fakeProvider, "config_file": cfg})
	if err != nil {
		t.Fatal(err)
	}
	if s.InterfaceVersion != "v0.1.0" || s.Timeout != 2*time.Minute || s.OSType != "linux" || s.Arch != "amd64" ||
		s.ExtraSpecs != nil || s.EnvironmentPassthrough != nil {
		t.Fatalf("defaults: %+v", s)
	}
	s, err = external.ParseSettings(map[string]any{
		"provider_executable": fakeProvider, "config_file": cfg, "interface_version": "0.1.1",
		"timeout": "30s", "extra_specs": `{"a": 1}`, "environment_passthrough": []any{"AWS_", "HOME"},
		"tools": []any{map[string]any{"os": "linux", "architecture": "x64", "download_url": "https://x/r.tgz", "filename": "r.tgz"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.InterfaceVersion != "v0.1.1" || s.Timeout != 30*time.Second || string(s.ExtraSpecs) != `{"a": 1}` ||
		len(s.EnvironmentPassthrough) != 2 || len(s.Tools) != 1 || s.Tools[0].GetFilename() != "r.tgz" {
		t.Fatalf("parsed: %+v", s)
	}
}

func TestParseSettingsErrorsNameTheKey(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "provider.toml")
	notExec := filepath.Join(dir, "not-exec")
	for _, p := range []string{cfg, notExec} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	valid := func(kv ...any) map[string]any {
		m := map[string]any{"provider_executable": fakeProvider, "config_file": cfg}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(m, kv[i].(string))
			} else {
				m[kv[i].(string)] = kv[i+1]
			}
		}
		return m
	}
	cases := []struct {
		settings map[string]any
		want     string
	}{
		{valid("provider_executable", nil), "provider_executable: required"},
		{valid("provider_executable", "bin/garm-provider-aws"), "provider_executable: \"bin/garm-provider-aws\": must be an absolute path"},
		{valid("provider_executable", filepath.Join(dir, "missing")), "provider_executable: "},
		{valid("provider_executable", notExec), "provider_executable: " + `"` + notExec + `": not executable`},
		{valid("provider_executable", dir), "not a regular file"},
		{valid("config_file", nil), "config_file: required"},
		{valid("config_file", filepath.Join(dir, "nope.toml")), "config_file: "},
		{valid("interface_version", "v0.2.0"), "interface_version: \"v0.2.0\": want v0.1.0 or v0.1.1"},
		{valid("timeout", "soon"), "timeout: want a positive duration"},
		{valid("timeout", "0s"), "timeout: want a positive duration"},
		{valid("environment_passthrough", "AWS_"), "environment_passthrough: want a list"},
		{valid("environment_passthrough", []any{"GARM_"}), "environment_passthrough: \"GARM_\": variables starting with GARM are never passed through"},
		{valid("environment_passthrough", []any{""}), "environment_passthrough: \"\": not a variable name prefix"},
		{valid("os_type", "macos"), "os_type: \"macos\": want one of linux, windows, unknown"},
		{valid("arch", "x64"), "arch: \"x64\": want one of amd64, i386, arm64, arm"},
		{valid("flavor", 7), "flavor: want a string"},
		{valid("extra_specs", "[1]"), "extra_specs: want an object"},
		{valid("tools", []any{map[string]any{"os": "linux"}}), "tools: [0]: os, architecture and download_url are required"},
		{valid("tools", []any{map[string]any{"color": "red"}}), "tools: want a list"},
		{valid("bogus", 1), "unknown setting bogus"},
	}
	for _, tc := range cases {
		_, err := external.ParseSettings(tc.settings)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			got, _ := json.Marshal(tc.settings)
			t.Errorf("settings %s: err = %v, want it to contain %q", got, err, tc.want)
		}
	}
}

func TestNewNeedsControllerAndPool(t *testing.T) {
	s := external.Settings{Executable: fakeProvider, ConfigFile: fakeProvider}
	if _, err := external.New(s, external.Options{PoolID: "p"}); err == nil {
		t.Error("no controller id accepted")
	}
	if _, err := external.New(s, external.Options{ControllerID: "c"}); err == nil {
		t.Error("no pool id accepted")
	}
	if _, err := external.New(external.Settings{}, external.Options{ControllerID: "c", PoolID: "p"}); err == nil {
		t.Error("empty settings accepted")
	}
}
