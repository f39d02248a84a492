package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/providers/external/conformance"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// TestProviderCheck runs `runfleet provider check` against the fake GARM
// provider binary: conformant, ignoring deletes by name, and broken.
func TestProviderCheck(t *testing.T) {
	dir := t.TempDir()
	bin, err := externaltest.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	pools := map[string]externaltest.Config{
		// Slow enough for the 10ms timeout probe to kill it.
		"garm":   {Slow: map[string]string{"GetInstance": "100ms"}},
		"leaky":  {IgnoreDeleteByName: true},
		"broken": {Status: "booting"},
		// Installs the runner from the request's tools, as GARM's
		// providers do: only GitHub's list lets its create pass.
		"needs-tools": {RequireTools: true},
	}
	var poolsYAML strings.Builder
	for _, name := range []string{"garm", "leaky", "broken", "needs-tools"} {
		cfg := pools[name]
		cfg.StateFile = filepath.Join(dir, name+"-state.json")
		cfgPath := filepath.Join(dir, name+".json")
		if err := cfg.Write(cfgPath); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&poolsYAML, `
  - name: %s
    owner: octo-org/app
    labels: [self-hosted, linux]
    max_runners: 2
    bootstrap_timeout: 1m
    provider:
      type: external
      settings:
        provider_executable: %s
        config_file: %s
        environment_passthrough: [AWS_]
`, name, bin, cfgPath)
	}
	secret := filepath.Join(dir, "webhook-secret")
	writeFile(t, secret, "s3cret")
	configPath := filepath.Join(dir, "runfleet.yaml")
	writeFile(t, configPath, fmt.Sprintf("controller_id: check\ngithub: {simulated: true}\nwebhook: {secret_file: %s}\npools:%s", secret, poolsYAML.String()))
	// The same pools with a GitHub that refuses every call.
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"message": "Resource not accessible by integration"}`)
	}))
	t.Cleanup(refusing.Close)
	token := filepath.Join(dir, "github-token")
	writeFile(t, token, "ghp_not_a_token")
	refusedPath := filepath.Join(dir, "refused.yaml")
	writeFile(t, refusedPath, fmt.Sprintf("controller_id: check\ngithub: {base_url: %s, token_file: %s}\nwebhook: {secret_file: %s}\npools:%s", refusing.URL, token, secret, poolsYAML.String()))

	check := func(args ...string) cliResult {
		return runCLI(t, nil, append([]string{"provider", "check", "--config", configPath, "--settle", "200ms"}, args...)...)
	}

	t.Run("conformant", func(t *testing.T) {
		res := check("--pool", "garm")
		if res.code != exitOK || !strings.Contains(res.stdout, "12 passed, 0 failed, 0 skipped: the provider conforms.") {
			t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		flat := strings.Join(strings.Fields(res.stdout), " ")
		for _, want := range []string{"PASS a call past its timeout is killed 10ms timeout: killed", "PASS DeleteInstance by name removes the machine"} {
			if !strings.Contains(flat, want) {
				t.Errorf("output lacks %q:\n%s", want, res.stdout)
			}
		}
		if s, _ := externaltest.ReadState(filepath.Join(dir, "garm-state.json")); len(s.Machines) != 0 {
			t.Errorf("machines left: %+v", s.Machines)
		}
	})

	t.Run("offers GitHub's runner downloads", func(t *testing.T) {
		res := check("--pool", "needs-tools")
		if res.code != exitOK || !strings.Contains(res.stdout, "12 passed, 0 failed, 0 skipped: the provider conforms.") || strings.Contains(res.stdout, "NOTE:") {
			t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
	})

	t.Run("GitHub refuses the runner downloads", func(t *testing.T) {
		res := runCLI(t, nil, "provider", "check", "--config", refusedPath, "--settle", "200ms", "--pool", "needs-tools")
		if res.code != exitFailure {
			t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		flat := strings.Join(strings.Fields(res.stdout), " ")
		for _, want := range []string{
			"NOTE: the create request offered no runner downloads",
			"listing octo-org/app's runner downloads failed",
			"FAIL CreateInstance", "no runner download for OS linux and arch amd64",
		} {
			if !strings.Contains(flat, want) {
				t.Errorf("output lacks %q:\n%s", want, res.stdout)
			}
		}
	})

	t.Run("ignores delete by name", func(t *testing.T) {
		res := check("--pool", "leaky")
		if res.code != exitFailure || !strings.Contains(res.stdout, "11 passed, 1 failed") {
			t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		flat := strings.Join(strings.Fields(res.stdout), " ")
		if !strings.Contains(flat, "FAIL DeleteInstance by name removes the machine runfleet-check-") || !strings.Contains(flat, "ignores deletes by name") {
			t.Errorf("the failure is not explained:\n%s", res.stdout)
		}
	})

	t.Run("broken, as JSON", func(t *testing.T) {
		res := check("--pool", "broken", "--json")
		if res.code != exitFailure {
			t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		var report conformance.Report
		if err := json.Unmarshal([]byte(res.stdout), &report); err != nil {
			t.Fatalf("not a JSON report: %v\n%s", err, res.stdout)
		}
		var failed []string
		for _, r := range report.Results {
			if r.Status == conformance.Fail {
				failed = append(failed, r.Check+": "+r.Detail)
			}
		}
		if report.Pool != "broken" || len(failed) != 2 || !strings.Contains(failed[0], `status "booting" is not one of`) {
			t.Errorf("failures %q", failed)
		}
	})

	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{
			{"provider"},
			{"provider", "frob"},
			{"provider", "check"},
			{"provider", "check", "--config", configPath},                // four pools, none chosen
			{"provider", "check", "--config", configPath, "--pool", "x"}, // no such pool
			{"provider", "check", "--config", filepath.Join(dir, "missing.yaml"), "--pool", "garm"},
		} {
			res := runCLI(t, nil, args...)
			if res.code != exitUsage || res.stderr == "" {
				t.Errorf("runfleet %s: exit %d, stderr %q; want 2 and a message", strings.Join(args, " "), res.code, res.stderr)
			}
		}
		if res := runCLI(t, nil, "help", "provider"); res.code != exitOK || !strings.Contains(res.stdout, "runfleet provider check --config FILE") {
			t.Errorf("help provider: %+v", res)
		}
	})
}
