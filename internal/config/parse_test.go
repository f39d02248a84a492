package config_test

import (
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/config"
)

func TestParseValidAppliesDefaults(t *testing.T) {
	cfg, err := parse(t, validYAML, defaultEnv())
	if err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	if string(cfg.Webhook.Secret) != "hook-secret-value" {
		t.Errorf("webhook secret not resolved")
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"webhook.max_body_bytes", cfg.Webhook.MaxBodyBytes, int64(1 << 20)},
		{"server.listen", cfg.Server.Listen, "127.0.0.1:8080"},
		{"server.api_token", cfg.Server.APIToken, ""},
		{"store.kind", cfg.Store.Kind, "bolt"},
		{"store.dir", cfg.Store.Dir, "./runfleet-data"},
		{"engine.workers", cfg.Engine.Workers, 8},
		{"engine.reconcile_interval", cfg.Engine.ReconcileInterval, 30 * time.Second},
		{"engine.delete_backoff_min", cfg.Engine.DeleteBackoffMin, time.Second},
		{"engine.delete_backoff_max", cfg.Engine.DeleteBackoffMax, 5 * time.Minute},
		{"engine.max_receives", cfg.Engine.MaxReceives, 10},
		{"engine.visibility_timeout", cfg.Engine.VisibilityTimeout, 5 * time.Minute},
		{"pools[0].bootstrap_timeout", cfg.Pools[0].BootstrapTimeout, 20 * time.Minute},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestParseKeepsExplicitValues(t *testing.T) {
	yaml := validYAML + `
engine:
  workers: 2
  reconcile_interval: 1m30s
  delete_backoff_min: 2s
  delete_backoff_max: 10m
server:
  listen: 0.0.0.0:9000
`
	yaml = replace(t, "    max_runners: 3\n", "    max_runners: 3\n    bootstrap_timeout: 20m\n    min_idle: 1\n") + yaml[len(validYAML):]
	cfg, err := parse(t, yaml, defaultEnv())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Engine.Workers != 2 || cfg.Engine.ReconcileInterval != 90*time.Second ||
		cfg.Engine.DeleteBackoffMin != 2*time.Second || cfg.Engine.DeleteBackoffMax != 10*time.Minute ||
		cfg.Server.Listen != "0.0.0.0:9000" || cfg.Pools[0].BootstrapTimeout != 20*time.Minute || cfg.Pools[0].MinIdle != 1 {
		t.Errorf("explicit values not kept: %+v %+v", cfg.Engine, cfg.Pools[0])
	}
}

func TestParseYAMLErrorsNameTheField(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want []string
	}{
		{"empty", "", []string{"config is empty"}},
		{"comments only", "# nothing\n", []string{"config is empty"}},
		{"two documents", validYAML + "---\ncontroller_id: x\n", []string{"config must be a single YAML document"}},
		{"syntax", "pools: [\n", []string{"not valid YAML: line 1: did not find expected node content"}},
		{"unknown top-level field", validYAML + "colour: blue\n", []string{"colour: line 14: unknown field"}},
		{"unknown pool field", replace(t, "    max_runners: 3\n", "    max_runners: 3\n    lables: [x]\n"),
			[]string{"pools[0].lables: line 12: unknown field; did you mean \"labels\"?"}},
		{"unknown nested field", replace(t, "  simulated: true\n", "  simulated: true\n  app:\n    idd: 3\n"),
			[]string{"github.app.idd: line 6: unknown field; did you mean \"id\"?"}},
		{"resolved secrets are not YAML", replace(t, "  secret_env: HOOK_SECRET\n", "  secret_env: HOOK_SECRET\n  secret: abc\n"),
			[]string{"webhook.secret: line 7: unknown field"}},
		{"wrong type", replace(t, "max_runners: 3", "max_runners: ten"),
			[]string{`pools[0].max_runners: line 11: must be a whole number, not "ten"`}},
		{"bad duration", validYAML + "engine:\n  reconcile_interval: soon\n",
			[]string{`engine.reconcile_interval: line 15: must be a duration such as 30s, 5m or 1h30m, not "soon"`}},
		{"bare number duration", validYAML + "engine:\n  reconcile_interval: 30\n",
			[]string{`engine.reconcile_interval: line 15: 30 has no unit: write "30s" for 30 seconds ("30m" for minutes, "30h" for hours)`}},
		{"labels not a list", replace(t, "labels: [self-hosted, linux, x64]", "labels: linux"),
			[]string{`pools[0].labels: line 10: must be a list, such as [a, b], not "linux"`}},
		{"pools not a list", replace(t, "pools:\n", "pools: 3\nx:\n"),
			[]string{"pools: line 7: must be a list", "x: line 8: unknown field"}},
		{"section not a mapping", validYAML + "engine: fast\n", []string{"engine: line 14: must be a mapping of fields"}},
		{"every problem reported", validYAML + "colour: blue\nengine:\n  workerz: 3\n",
			[]string{"colour: line 14: unknown field", `engine.workerz: line 16: unknown field; did you mean "workers"?`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := parse(t, c.yaml, defaultEnv())
			if err == nil {
				t.Fatal("accepted")
			}
			assertMessages(t, err, c.want...)
		})
	}
}

func TestParseFollowsAnchorsAndMerges(t *testing.T) {
	yaml := `
controller_id: test
github: {simulated: true}
webhook: {secret_env: HOOK_SECRET}
pools:
  - &base
    name: a
    owner: octo-org
    labels: [linux]
    max_runners: 2
    provider: {type: simulated}
  - <<: *base
    name: b
    labels: [windows]
  - <<: *base
    name: c
    lables: [oops]
`
	_, err := parse(t, yaml, defaultEnv())
	assertMessages(t, err, `pools[2].lables: line 17: unknown field; did you mean "labels"?`)
	if got := len(messages(t, err)); got != 1 {
		t.Errorf("want exactly one problem, got %d: %v", got, err)
	}

	cfg, err := parse(t, yaml[:len(yaml)-len("    lables: [oops]\n")], defaultEnv())
	if err != nil {
		t.Fatal(err)
	}
	if b := cfg.Pools[1]; b.Owner != "octo-org" || b.MaxRunners != 2 || b.Labels[0] != "windows" {
		t.Errorf("merge not applied: %+v", b)
	}
}

func TestLoadNamesTheFile(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/bad.yaml"
	writeFile(t, path, "controller_id: x\n")
	_, err := config.Load(path)
	if err == nil {
		t.Fatal("accepted")
	}
	assertContains(t, err.Error(), path)
	assertContains(t, err.Error(), "pools: at least one pool is required")

	if _, err := config.Load(dir + "/missing.yaml"); err == nil {
		t.Error("missing file accepted")
	}
}
