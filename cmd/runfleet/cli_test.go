package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

func TestHelpAndVersion(t *testing.T) {
	res := runCLI(t, nil, "help")
	if res.code != exitOK || !strings.Contains(res.stdout, "runfleet instances delete NAME [--force]") {
		t.Errorf("help: %+v", res)
	}
	res = runCLI(t, nil, "help", "instances")
	if res.code != exitOK || !strings.Contains(res.stdout, "runfleet instances list") {
		t.Errorf("help instances: %+v", res)
	}
	res = runCLI(t, nil, "instances", "delete", "-h")
	if res.code != exitOK || !strings.Contains(res.stderr, "-force") || !strings.Contains(res.stderr, "RUNFLEET_API_TOKEN") {
		t.Errorf("instances delete -h: %+v", res)
	}
	res = runCLI(t, map[string]string{"RUNFLEET_API_TOKEN": "do-not-print-me"}, "instances", "list", "-h")
	if strings.Contains(res.stderr, "do-not-print-me") {
		t.Errorf("-h printed the token from the environment: %s", res.stderr)
	}
	res = runCLI(t, nil, "version")
	if res.code != exitOK || !strings.HasPrefix(res.stdout, "runfleet "+version+" (") || !strings.Contains(res.stdout, runtime.Version()) {
		t.Errorf("version: %+v", res)
	}
}

// TestEveryCommandTakesOutputJSON holds the README's "every command but
// serve, cache-agent and help takes -o json" against the synopsis in the main usage and
// each command's own flags.
func TestEveryCommandTakesOutputJSON(t *testing.T) {
	commands := 0
	for _, line := range strings.Split(mainUsage, "\n") {
		synopsis, ok := strings.CutPrefix(line, "  runfleet ")
		if !ok {
			continue
		}
		var words []string
		for _, w := range strings.Fields(synopsis) {
			if w != strings.ToLower(w) || strings.HasPrefix(w, "-") || strings.HasPrefix(w, "[") {
				break // FILE, NAME, JOB, a flag: the command's name has ended
			}
			words = append(words, w)
		}
		// serve and cache-agent are daemons; help prints usage.
		if words[0] == "serve" || words[0] == "cache-agent" || words[0] == "help" {
			continue
		}
		commands++
		if !strings.Contains(synopsis, "[-o table|json]") {
			t.Errorf("usage of %s lacks [-o table|json]: %s", strings.Join(words, " "), line)
		}
		res := runCLI(t, nil, append(words, "-h")...)
		if res.code != exitOK || !strings.Contains(res.stderr, "-o format") {
			t.Errorf("%s -h does not offer -o: %+v", strings.Join(words, " "), res)
		}
	}
	if commands < 10 {
		t.Fatalf("found %d commands in the main usage; the parser lost them", commands)
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	cases := [][]string{
		{},
		{"frobnicate"},
		{"instances"},
		{"instances", "frob"},
		{"instances", "show"},
		{"instances", "show", "a", "b"},
		{"instances", "list", "--bogus"},
		{"instances", "list", "--server", "not a url"},
		{"webhook", "send"},
		{"webhook", "send", "payload.json"}, // no secret anywhere
		{"serve"},
		{"serve", "--config", "x.yaml", "--log-level", "loud"},
		{"reconcile", "extra"},
		{"jobs"},
		{"jobs", "frob"},
		{"jobs", "list", "extra"},
		{"instances", "list", "--status", "runing"},
		{"instances", "list", "-o", "yaml"},
		{"version", "-o", "xml"},
		{"serve", "--config", "x.yaml", "--log-format", "logfmt"},
	}
	for _, args := range cases {
		res := runCLI(t, nil, args...)
		if res.code != exitUsage || res.stderr == "" {
			t.Errorf("runfleet %s: exit %d, stderr %q; want 2 and a message", strings.Join(args, " "), res.code, res.stderr)
		}
	}
}

func TestParseAcceptsFlagsAnywhere(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	force := fs.Bool("force", false, "")
	server := fs.String("server", "", "")
	pos, status, done := parse(fs, []string{"name-1", "--force", "--server", "http://x", "--", "-odd-name"})
	if done || status != exitOK {
		t.Fatalf("parse: status %d done %v", status, done)
	}
	if !*force || *server != "http://x" || !slices.Equal(pos, []string{"name-1", "-odd-name"}) {
		t.Errorf("force %v server %q positional %q", *force, *server, pos)
	}
}

func TestServeRefusesBadConfigWithEveryProblem(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, `
controller_id: Not_Valid
github: {}
webhook: {}
pools:
  - name: p
    owner: octo-org
    labels: [x]
    max_runners: -1
    provider: {type: simulated}
`)
	res := runCLI(t, nil, "serve", "--config", bad)
	if res.code != exitUsage {
		t.Fatalf("exit %d, want 2: %+v", res.code, res)
	}
	for _, field := range []string{"controller_id", "github", "webhook", "pools[0].max_runners"} {
		if !strings.Contains(res.stderr, field+":") {
			t.Errorf("stderr does not name %s:\n%s", field, res.stderr)
		}
	}
}

func TestServeRefusesPoolsWhoseProviderCannotBeBuilt(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "data")
	cfg := filepath.Join(dir, "ec2.yaml")
	writeFile(t, cfg, `
controller_id: ctl
github: {simulated: true}
webhook: {secret_env: RUNFLEET_TEST_SECRET}
store: {dir: `+store+`}
pools:
  - name: cloud
    owner: octo-org
    labels: [x]
    max_runners: 1
    provider: {type: ec2}
  - name: odd
    owner: octo-org
    labels: [y]
    max_runners: 1
    provider: {type: simulated, settings: {failure_rate: 2}}
`)
	t.Setenv("RUNFLEET_TEST_SECRET", "s")
	res := runCLI(t, nil, "serve", "--config", cfg)
	if res.code != exitUsage {
		t.Fatalf("exit %d, want 2: %+v", res.code, res)
	}
	for _, want := range []string{`pools[0].provider.settings: pool "cloud"`, `pools[1].provider.settings: pool "odd"`, "failure_rate"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, res.stderr)
		}
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Errorf("store.dir was created for a config that cannot be served (%v)", err)
	}
}

func TestOperatorCommandsReportServerErrors(t *testing.T) {
	srv := startServe(t, t.TempDir(), false)
	env := srv.cliEnv()
	env["RUNFLEET_API_TOKEN"] = "wrong"
	res := runCLI(t, env, "instances", "list")
	if res.code != exitFailure || !strings.Contains(res.stderr, "401") || !strings.Contains(res.stderr, "RUNFLEET_API_TOKEN") {
		t.Errorf("wrong token: %+v", res)
	}
	// The flag outranks the environment.
	res = runCLI(t, env, "instances", "list", "--token", testAPIToken, "--json")
	if res.code != exitOK || strings.TrimSpace(res.stdout) != "[]" {
		t.Errorf("--token: %+v", res)
	}
	env = srv.cliEnv()
	res = runCLI(t, env, "instances", "show", "runfleet-none-1-1")
	if res.code != exitFailure || !strings.Contains(res.stderr, "404") || !strings.Contains(res.stderr, "runfleet-none-1-1") {
		t.Errorf("show unknown: %+v", res)
	}
	res = runCLI(t, env, "instances", "delete", "runfleet-none-1-1", "--force")
	if res.code != exitFailure || !strings.Contains(res.stderr, "404") {
		t.Errorf("delete unknown: %+v", res)
	}
	res = runCLI(t, env, "reconcile")
	if res.code != exitOK || !strings.Contains(res.stdout, "examined 0 live instances") {
		t.Errorf("reconcile: %+v", res)
	}
	res = runCLI(t, map[string]string{"RUNFLEET_SERVER": "http://127.0.0.1:1"}, "instances", "list")
	if res.code != exitFailure || !strings.Contains(res.stderr, "cannot reach runfleet") {
		t.Errorf("unreachable server: %+v", res)
	}
	// A rejected delivery fails the command and shows runfleet's reason.
	env["RUNFLEET_WEBHOOK_SECRET"] = "wrong"
	res = runCLI(t, env, "webhook", "send", payload(t, "queued.json"))
	if res.code != exitFailure || !strings.Contains(res.stdout, "HTTP 401 rejected") {
		t.Errorf("wrongly signed send: %+v", res)
	}
}

func TestInstanceTable(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	list := []*runner.Instance{
		{Name: "runfleet-a-1-1", Pool: "a", Status: runner.StatusRunning, RunnerStatus: runner.RunnerActive, JobID: 1, CreatedAt: at.Add(-90 * time.Second)},
		{Name: "runfleet-b-2-1", Pool: "b", Status: runner.StatusPendingDelete, JobID: 2, CreatedAt: at.Add(-time.Hour),
			Attempts: 3, NextAttemptAt: at.Add(4 * time.Second), ProviderFault: "cloud says\nno"},
		{Name: "runfleet-a-3-1", Pool: "a", Status: runner.StatusDeleted, JobID: 3, CreatedAt: at.Add(-time.Hour),
			Cost: &runner.Cost{USD: 0.1664, USDPerHour: 0.0832, Seconds: 7200}},
		{Name: "runfleet-a-4-1", Pool: "a", Status: runner.StatusDeleted, JobID: 4, CreatedAt: at.Add(-time.Hour),
			Cost: &runner.Cost{Seconds: 60, Unknown: "no price for pool \"a\""}},
		{Name: "runfleet-a-5-1", Pool: "a", Status: runner.StatusDeleted, JobID: 5, CreatedAt: at.Add(-time.Hour), Cost: &runner.Cost{}},
	}
	var buf bytes.Buffer
	writeInstanceTable(&buf, list, at)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("table:\n%s", buf.String())
	}
	for _, want := range []string{"runfleet-a-1-1", "running", "active", "1m30s"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("row 1 lacks %q: %s", want, lines[1])
		}
	}
	for _, want := range []string{"pending_delete", " 1h ", "attempt 3", "retry in 4s", "cloud says no"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("row 2 lacks %q: %s", want, lines[2])
		}
	}
	// A deleted instance says what it cost, or why that is unknown.
	for i, want := range []string{"cost $0.17 (7200s at $0.0832/h)", `cost unknown: no price for pool "a"`, "cost $0.00 (no machine was made)"} {
		if !strings.Contains(lines[3+i], want) {
			t.Errorf("row %d lacks %q: %s", 3+i, want, lines[3+i])
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
