package config_test

import (
	"slices"
	"strings"
	"testing"
)

// One run lists every problem: a badly typed value or unknown key does
// not hide what validation finds in the rest of the file, and validation
// does not report again what the decoding problem already says.
func TestEveryProblemInAFileIsReportedAtOnce(t *testing.T) {
	yaml := replace(t, "    max_runners: 3\n", "    max_runners: ten\n    min_idle: -1\n") +
		"engine:\n  workerz: 3\n  delete_backoff_min: 10m\n  delete_backoff_max: 1m\n  reconcile_interval: 30\n"
	_, err := parse(t, yaml, defaultEnv())
	want := []string{
		`pools[0].max_runners: line 11: must be a whole number, not "ten"`,
		`engine.workerz: line 16: unknown field; did you mean "workers"?`,
		`engine.reconcile_interval: line 19: 30 has no unit: write "30s" for 30 seconds ("30m" for minutes, "30h" for hours)`,
		"pools[0].min_idle: must be ≥ 0",
		"engine.delete_backoff_min: must be ≤ delete_backoff_max (1m0s)",
	}
	assertMessages(t, err, want...)
	got := messages(t, err)
	if len(got) != len(want) {
		t.Errorf("want exactly %d problems, got:\n  %s", len(want), strings.Join(got, "\n  "))
	}
	for _, m := range got {
		if strings.HasPrefix(m, "pools[0].max_runners: must") || strings.HasPrefix(m, "engine.reconcile_interval: must") {
			t.Errorf("validation repeats a decoding problem: %q", m)
		}
	}
}

// A misspelt key is answered with the key it most likely meant, and the
// meant key is not then reported missing.
func TestUnknownKeysSuggestTheKeyMeant(t *testing.T) {
	cases := []struct{ from, to, want string }{
		{"  secret_env: HOOK_SECRET\n", "  secretenv: HOOK_SECRET\n", `webhook.secretenv: line 6: unknown field; did you mean "secret_env"?`},
		{"    max_runners: 3\n", "    maxRunners: 3\n", `pools[0].maxRunners: line 11: unknown field; did you mean "max_runners"?`},
		{"    labels: [self-hosted, linux, x64]\n", "    lables: [self-hosted, linux, x64]\n", `pools[0].lables: line 10: unknown field; did you mean "labels"?`},
		{"controller_id: test\n", "controler_id: test\n", `controler_id: line 2: unknown field; did you mean "controller_id"?`},
		{"    provider:\n", "    colour: blue\n    provider:\n", "pools[0].colour: line 12: unknown field"},
	}
	for _, c := range cases {
		_, err := parse(t, replace(t, c.from, c.to), defaultEnv())
		got := messages(t, err)
		if !slices.Contains(got, c.want) {
			t.Errorf("%q: want %q, got:\n  %s", c.to, c.want, strings.Join(got, "\n  "))
		}
		for _, m := range got {
			if strings.Contains(m, "required") || strings.Contains(m, "must be ≥ 1") || strings.Contains(m, "must not be empty") {
				t.Errorf("%q: the meant key is reported too: %q", c.to, m)
			}
		}
	}
}

// A syntax error stops the YAML parser, not the checks of the other
// top-level sections: their unknown keys, bad values and invalid settings
// are reported with it; what the broken section holds is not guessed at.
func TestAYAMLSyntaxErrorDoesNotHideTheOtherSections(t *testing.T) {
	yaml := `controller_id: Bad_ID
github:
  simulated: true
webhook:
  secret_env: HOOK_SECRET
  max_body_bytes: lots
pools:
  - name: linux
    labels: [linux
    max_runners: 3
engine:
  workers: -2
  visibilty_timeout: 5m
`
	_, err := parse(t, yaml, defaultEnv())
	got := messages(t, err)
	if len(got) == 0 || !strings.HasPrefix(got[0], "not valid YAML: line ") {
		t.Fatalf("the syntax error is not reported first: %v", got)
	}
	assertMessages(t, err,
		`webhook.max_body_bytes: line 6: must be a whole number, not "lots"`,
		`engine.visibilty_timeout: line 13: unknown field; did you mean "visibility_timeout"?`,
		"engine.workers: must be ≥ 1",
		`controller_id: "Bad_ID": must be 1–64 lower-case letters, digits or '-', not starting or ending with '-'`,
	)
	for _, m := range got {
		if strings.HasPrefix(m, "pools") {
			t.Errorf("a problem of the unreadable pools section is guessed at: %q", m)
		}
	}
}
