package config_test

import (
	"fmt"
	"strings"
	"testing"
)

func TestValidationMessages(t *testing.T) {
	twoPools := validYAML + `  - name: second
    owner: octo-org/app
    labels: [gpu]
    max_runners: 1
    provider:
      type: simulated
`
	pool := func(field, value string) string {
		// Adds one field to the first pool.
		return replace(t, "    max_runners: 3\n", "    max_runners: 3\n    "+field+": "+value+"\n")
	}
	cases := []struct {
		name string
		yaml string
		env  func(*testEnv)
		want []string
	}{
		{"controller id missing", replace(t, "controller_id: test\n", ""), nil,
			[]string{"controller_id: required (it names and tags everything runfleet creates)"}},
		{"controller id bad", replace(t, "controller_id: test", "controller_id: Test_1"), nil,
			[]string{`controller_id: "Test_1": must be 1–64 lower-case letters, digits or '-', not starting or ending with '-'`}},

		{"github none", replace(t, "  simulated: true\n", "  base_url: https://ghe.example.com/api/v3\n"), nil,
			[]string{"github: set exactly one of simulated: true, app, or token_file/token_env"}},
		{"github two", replace(t, "  simulated: true\n", "  simulated: true\n  token_env: GH_TOKEN\n"),
			func(e *testEnv) { e.env["GH_TOKEN"] = "t" },
			[]string{"github: set exactly one of simulated: true, app, or token_file/token_env"}},
		{"github token file and env", replace(t, "  simulated: true\n", "  token_env: GH_TOKEN\n  token_file: /t\n"),
			func(e *testEnv) { e.env["GH_TOKEN"] = "t"; e.files["/t"] = "t" },
			[]string{"github: set only one of token_file and token_env"}},
		{"github base url", replace(t, "  simulated: true\n", "  simulated: true\n  base_url: ghe.example.com\n"), nil,
			[]string{`github.base_url: "ghe.example.com": must be an absolute http:// or https:// URL`}},
		{"github budget over GitHub's limits", replace(t, "  simulated: true\n", "  simulated: true\n  budget:\n    points_per_minute: 1000\n    max_in_flight: 101\n"), nil,
			[]string{
				"github.budget.points_per_minute: must be 1–900 (GitHub refuses more than 900 points a minute); 0 means the default, 810",
				"github.budget.max_in_flight: must be 1–100 (GitHub refuses more than 100 concurrent requests); 0 means the default, 10",
			}},
		{"github app fields", replace(t, "  simulated: true\n", "  app:\n    id: 0\n    installation_id: -1\n"), nil,
			[]string{
				"github.app.id: must be > 0 (the App's numeric id)",
				"github.app.installation_id: must be ≥ 0 (0 = the installation that sent each webhook)",
				"github.app: set private_key_file or private_key_env",
			}},
		{"github app two keys", replace(t, "  simulated: true\n", "  app:\n    id: 1\n    private_key_file: /k\n    private_key_env: K\n"),
			func(e *testEnv) { e.files["/k"] = testPEM; e.env["K"] = testPEM },
			[]string{"github.app: set only one of private_key_file and private_key_env"}},

		{"webhook secret missing", replace(t, "  secret_env: HOOK_SECRET\n", "  max_body_bytes: 1000\n"), nil,
			[]string{"webhook: a secret is required: set secret_file or secret_env"}},
		{"webhook secret twice", replace(t, "  secret_env: HOOK_SECRET\n", "  secret_env: HOOK_SECRET\n  secret_file: /s\n"),
			func(e *testEnv) { e.files["/s"] = "x" },
			[]string{"webhook: set only one of secret_file and secret_env"}},
		{"webhook secret env unset", validYAML, func(e *testEnv) { delete(e.env, "HOOK_SECRET") },
			[]string{"webhook.secret_env: environment variable HOOK_SECRET is not set"}},
		{"webhook secret env empty", validYAML, func(e *testEnv) { e.env["HOOK_SECRET"] = "\n" },
			[]string{"webhook.secret_env: environment variable HOOK_SECRET is empty"}},
		{"webhook secret file missing", replace(t, "secret_env: HOOK_SECRET", "secret_file: /run/secret"), nil,
			[]string{"webhook.secret_file: cannot read /run/secret: open /run/secret: file does not exist"}},
		{"webhook secret file empty", replace(t, "secret_env: HOOK_SECRET", "secret_file: /run/secret"),
			func(e *testEnv) { e.files["/run/secret"] = "  \n" },
			[]string{"webhook.secret_file: /run/secret is empty"}},
		{"webhook body limit negative", replace(t, "  secret_env: HOOK_SECRET\n", "  secret_env: HOOK_SECRET\n  max_body_bytes: -1\n"), nil,
			[]string{"webhook.max_body_bytes: must be > 0"}},
		{"webhook body limit huge", replace(t, "  secret_env: HOOK_SECRET\n", "  secret_env: HOOK_SECRET\n  max_body_bytes: 100000000\n"), nil,
			[]string{"webhook.max_body_bytes: must be ≤ 26214400 (GitHub never sends more)"}},

		{"server fields", validYAML + "server:\n  listen: localhost\n  public_url: /relative\n  api_token_env: A\n  api_token_file: /a\n",
			func(e *testEnv) { e.env["A"] = "a"; e.files["/a"] = "a" },
			[]string{
				`server.listen: "localhost": must be host:port (e.g. 127.0.0.1:8080)`,
				`server.public_url: "/relative": must be an absolute http:// or https:// URL`,
				"server: set only one of api_token_file and api_token_env",
			}},
		{"store kind unknown", validYAML + "store:\n  kind: sqlite\n", nil,
			[]string{`store.kind: unknown kind "sqlite" (one of bolt, postgres)`}},
		{"postgres without dsn", validYAML + "store:\n  kind: postgres\n", nil,
			[]string{"store: kind postgres needs dsn_file or dsn_env: a file or environment variable holding the " +
				"database's DSN (postgres://user:password@host:5432/runfleet), never written in the YAML"}},
		{"postgres dsn twice, and a dir", validYAML + "store:\n  kind: postgres\n  dir: /data\n  dsn_env: PG\n  dsn_file: /pg\n",
			func(e *testEnv) { e.env["PG"] = "postgres://x"; e.files["/pg"] = "postgres://x" },
			[]string{"store: set only one of dsn_file and dsn_env", "store.dir: is for kind bolt; kind postgres keeps everything in the database"}},
		{"postgres dsn env unset", validYAML + "store:\n  kind: postgres\n  dsn_env: RUNFLEET_PG_DSN\n", nil,
			[]string{"store.dsn_env: environment variable RUNFLEET_PG_DSN is not set"}},
		{"postgres dsn file missing", validYAML + "store:\n  kind: postgres\n  dsn_file: /run/pg-dsn\n", nil,
			[]string{"store.dsn_file: cannot read /run/pg-dsn: open /run/pg-dsn: file does not exist"}},
		{"bolt with a dsn", validYAML + "store:\n  kind: bolt\n  dsn_env: PG\n", func(e *testEnv) { e.env["PG"] = "postgres://x" },
			[]string{"store: dsn_file and dsn_env are for kind postgres; kind bolt keeps its file in store.dir"}},
		{"postgres bootstrap without a shared key", validYAML + "server:\n  public_url: https://runfleet.example.com\nstore:\n  kind: postgres\n  dsn_env: PG\n",
			func(e *testEnv) { e.env["PG"] = "postgres://x" },
			[]string{"server: with store.kind postgres and server.public_url set, give instance_token_key_file or " +
				"instance_token_key_env: every serve sharing the database must verify the tokens the others minted, " +
				"so the key cannot be one process's generated file (make one: openssl rand -hex 32)"}},
		{"store dir blank", validYAML + "store:\n  kind: bolt\n  dir: \" \"\n", nil,
			[]string{"store.dir: must not be blank (the directory of the bolt store's file)"}},
		{"api token env unset", validYAML + "server:\n  api_token_env: API_TOKEN\n", nil,
			[]string{"server.api_token_env: environment variable API_TOKEN is not set"}},
		{"metrics fields", validYAML + "server:\n  metrics_address: nine-thousand\n  metrics_token_env: M\n  metrics_token_file: /m\n", nil,
			[]string{
				`server.metrics_address: "nine-thousand": must be host:port (e.g. 127.0.0.1:9090)`,
				"server: set only one of metrics_token_file and metrics_token_env",
			}},
		{"metrics on the webhook's address", validYAML + "server:\n  listen: 127.0.0.1:8080\n  metrics_address: 127.0.0.1:8080\n", nil,
			[]string{`server.metrics_address: "127.0.0.1:8080" is server.listen already; leave metrics_address empty to serve /metrics there`}},
		{"metrics token env unset", validYAML + "server:\n  metrics_token_env: METRICS_TOKEN\n", nil,
			[]string{"server.metrics_token_env: environment variable METRICS_TOKEN is not set"}},

		{"engine negatives", validYAML + "engine:\n  workers: -1\n  max_receives: -2\n  reconcile_interval: -1s\n  visibility_timeout: -5m\n", nil,
			[]string{
				"engine.workers: must be ≥ 1",
				"engine.max_receives: must be ≥ 1",
				"engine.reconcile_interval: must be > 0",
				"engine.visibility_timeout: must be > 0",
			}},
		{"engine negative backoff", validYAML + "engine:\n  delete_backoff_min: -1s\n  delete_backoff_max: -1s\n", nil,
			[]string{"engine.delete_backoff_min: must be > 0", "engine.delete_backoff_max: must be > 0"}},
		{"engine backoff order", validYAML + "engine:\n  delete_backoff_min: 10m\n", nil,
			[]string{"engine.delete_backoff_min: must be ≤ delete_backoff_max (5m0s)"}},

		{"no pools", validYAML[:strings.Index(validYAML, "pools:")], nil,
			[]string{"pools: at least one pool is required"}},
		{"pool name missing", replace(t, "  - name: linux-x64\n    owner", "  - owner"), nil,
			[]string{"pools[0].name: required"}},
		{"pool name bad", replace(t, "name: linux-x64", "name: Linux_x64"), nil,
			[]string{`pools[0].name: "Linux_x64": must be 1–64 lower-case letters, digits or '-', not starting or ending with '-'`}},
		{"pool name duplicate", strings.Replace(twoPools, "name: second", "name: linux-x64", 1), nil,
			[]string{`pools[1].name: "linux-x64" is already the name of pools[0]`}},
		{"owner missing", replace(t, "    owner: octo-org\n", ""), nil,
			[]string{`pools[0].owner: required: "org", "org/repo" or "enterprise:slug"`}},
		{"owner bad", replace(t, "owner: octo-org", "owner: octo-org/a/b"), nil,
			[]string{`pools[0].owner: owner "octo-org/a/b": want "org", "org/repo" or "enterprise:slug"`}},
		{"owner bad enterprise", replace(t, "owner: octo-org", "owner: \"enterprise:\""), nil,
			[]string{`pools[0].owner: owner "enterprise:": enterprise slug must be one path segment`}},
		{"labels missing", replace(t, "    labels: [self-hosted, linux, x64]\n", ""), nil,
			[]string{"pools[0].labels: must not be empty"}},
		{"labels empty list", replace(t, "labels: [self-hosted, linux, x64]", "labels: []"), nil,
			[]string{"pools[0].labels: must not be empty"}},
		{"label empty", replace(t, "labels: [self-hosted, linux, x64]", `labels: [linux, ""]`), nil,
			[]string{"pools[0].labels[1]: must not be empty"}},
		{"label whitespace", replace(t, "labels: [self-hosted, linux, x64]", `labels: [" linux"]`), nil,
			[]string{`pools[0].labels[0]: " linux": must not start or end with whitespace`}},
		{"label comma", replace(t, "labels: [self-hosted, linux, x64]", `labels: ["linux,x64"]`), nil,
			[]string{`pools[0].labels[0]: "linux,x64": must not contain a comma`}},
		{"too many labels", replace(t, "labels: [self-hosted, linux, x64]", "labels: ["+manyLabels(101)+"]"), nil,
			[]string{"pools[0].labels: has 101 labels; GitHub allows at most 100"}},
		{"max runners missing", strings.Replace(twoPools, "    max_runners: 1\n", "", 1), nil,
			[]string{"pools[1].max_runners: must be ≥ 1"}},
		{"max runners zero", replace(t, "max_runners: 3", "max_runners: 0"), nil,
			[]string{"pools[0].max_runners: must be ≥ 1"}},
		{"min idle negative", pool("min_idle", "-1"), nil,
			[]string{"pools[0].min_idle: must be ≥ 0"}},
		{"min idle above max", pool("min_idle", "4"), nil,
			[]string{"pools[0].min_idle: must be ≤ max_runners (3)"}},
		{"warm target zero", pool("warm", "{target_queue_time: 0s, max_idle: 5}"), nil,
			[]string{"pools[0].warm.target_queue_time: must be > 0 (how long a job may wait for its runner, e.g. 10s)"}},
		{"warm percentile 120", pool("warm", "{target_queue_time: 10s, percentile: 120, max_idle: 5}"), nil,
			[]string{"pools[0].warm.percentile: must be above 0 and below 100 (e.g. 90: nine jobs in ten start within the target), got 120"}},
		{"warm percentile 100", pool("warm", "{target_queue_time: 10s, percentile: 100, max_idle: 5}"), nil,
			[]string{"pools[0].warm.percentile: must be above 0 and below 100 (e.g. 90: nine jobs in ten start within the target), got 100"}},
		{"warm max idle missing", pool("warm", "{target_queue_time: 10s}"), nil,
			[]string{"pools[0].warm.max_idle: must be ≥ 1 (the most warm machines the forecast may keep)"}},
		{"warm max idle below the floor", pool("min_idle", "3\n    warm: {target_queue_time: 10s, max_idle: 2}"), nil,
			[]string{"pools[0].warm.max_idle: must be ≥ min_idle (3), the floor the forecast never goes below"}},
		{"bootstrap timeout negative", pool("bootstrap_timeout", "-1m"), nil,
			[]string{"pools[0].bootstrap_timeout: must be > 0"}},
		{"spot breaker negative", pool("spot_breaker", "{interruptions: -1, window: 15m}"), nil,
			[]string{"pools[0].spot_breaker: interruptions, window and cooldown must be ≥ 0 (0: the default)"}},
		{"provider type missing", replace(t, "      type: simulated\n", "      settings: {}\n"), nil,
			[]string{"pools[0].provider.type: required (one of simulated, external, ec2, kubernetes)"}},
		{"provider type unknown", replace(t, "type: simulated", "type: lxd"), nil,
			[]string{`pools[0].provider.type: unknown type "lxd" (one of simulated, external, ec2, kubernetes)`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := defaultEnv()
			if c.env != nil {
				c.env(&e)
			}
			cfg, err := parse(t, c.yaml, e)
			if err == nil {
				t.Fatalf("accepted: %+v", cfg)
			}
			if cfg != nil {
				t.Error("a config returned with an error")
			}
			assertMessages(t, err, c.want...)
		})
	}
}

func TestValidationReportsEveryProblem(t *testing.T) {
	yaml := `
controller_id: test
github: {simulated: true}
webhook: {}
pools:
  - name: a
    owner: octo-org
    labels: []
    max_runners: 1
    provider: {type: simulated}
  - name: b
    owner: octo-org
    labels: [linux]
    max_runners: 0
    provider: {type: nope}
`
	_, err := parse(t, yaml, defaultEnv())
	want := []string{
		"webhook: a secret is required: set secret_file or secret_env",
		"pools[0].labels: must not be empty",
		"pools[1].max_runners: must be ≥ 1",
		`pools[1].provider.type: unknown type "nope" (one of simulated, external, ec2, kubernetes)`,
	}
	assertMessages(t, err, want...)
	if got := messages(t, err); len(got) != len(want) {
		t.Errorf("want exactly %d problems, got %d:\n%s", len(want), len(got), strings.Join(got, "\n"))
	}
}

func manyLabels(n int) string {
	labels := make([]string, n)
	for i := range labels {
		labels[i] = fmt.Sprintf("l%d", i)
	}
	return strings.Join(labels, ", ")
}
