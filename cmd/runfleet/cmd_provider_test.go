package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
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
		"garm":   {Slow: map[string]string{"ListInstances": "100ms"}},
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
		cfg.RecordFile = filepath.Join(dir, name+"-calls.jsonl")
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
		if res.code != exitOK || !strings.Contains(res.stdout, "11 passed, 0 warned, 0 failed, 0 skipped: the provider conforms.") {
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
		if res.code != exitOK || !strings.Contains(res.stdout, "11 passed, 0 warned, 0 failed, 0 skipped: the provider conforms.") || strings.Contains(res.stdout, "NOTE:") {
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

	// runfleet survives a provider whose delete by name does nothing, at a
	// cost the warning states; it conforms.
	t.Run("ignores delete by name", func(t *testing.T) {
		res := check("--pool", "leaky")
		if res.code != exitOK || !strings.Contains(res.stdout, "10 passed, 1 warned, 0 failed, 0 skipped: the provider conforms; read the warnings") {
			t.Fatalf("exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		flat := strings.Join(strings.Fields(res.stdout), " ")
		for _, want := range []string{
			"WARN DeleteInstance by name removes the machine the provider ignores deletes by name: runfleet-check-",
			"runfleet must list the pool and delete the machine by provider id",
			"at worst until the reconciler's next pass",
		} {
			if !strings.Contains(flat, want) {
				t.Errorf("the warning lacks %q:\n%s", want, res.stdout)
			}
		}
		if s, _ := externaltest.ReadState(filepath.Join(dir, "leaky-state.json")); len(s.Machines) != 0 {
			t.Errorf("machines left: %+v", s.Machines)
		}
	})

	// The check's machines carry a pool id of their own, never the pool's
	// name, so no installation's reconciler takes them for orphans.
	t.Run("under a fresh pool id", func(t *testing.T) {
		res := check("--pool", "garm")
		m := regexp.MustCompile(`as pool id ([0-9a-f-]{36})\)`).FindStringSubmatch(res.stdout)
		if res.code != exitOK || m == nil {
			t.Fatalf("exit %d, no pool id announced:\n%s%s", res.code, res.stdout, res.stderr)
		}
		recs, err := externaltest.ReadRecords(filepath.Join(dir, "garm-calls.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		sent := 0
		for _, r := range recs {
			if id, ok := r.Env["GARM_POOL_ID"]; ok && id == m[1] {
				sent++
			}
		}
		if sent == 0 {
			t.Errorf("no call sent GARM_POOL_ID %s", m[1])
		}
		again := check("--pool", "garm")
		if strings.Contains(again.stdout, m[1]) {
			t.Errorf("two checks used one pool id %s", m[1])
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
