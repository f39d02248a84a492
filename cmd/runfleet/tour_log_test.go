package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
)

// tourStep is one line of the README tour's second terminal: a runfleet
// command (its arguments after bin/runfleet) or an await.
type tourStep struct {
	line     string
	args     []string
	await    bool
	wantExit int // what the line's comment announces, "(exit 1)"; else 0
}

var announcedExit = regexp.MustCompile(`\(exit (\d)\)`)

// readmeTour reads the tour's second terminal from README.md, as a reader
// pastes it: the lines after "Terminal 2" up to the end of its code block.
func readmeTour(t *testing.T) []tourStep {
	t.Helper()
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var steps []tourStep
	inTerminal2, inBlock := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Terminal 2"):
			inTerminal2 = true
			continue
		case !inTerminal2:
			continue
		case strings.HasPrefix(line, "```") && !inBlock:
			inBlock = true
			continue
		case strings.HasPrefix(line, "```"):
			return steps
		}
		command, comment, _ := strings.Cut(line, "#")
		fields := strings.Fields(command)
		if len(fields) == 0 {
			continue
		}
		step := tourStep{line: line}
		if m := announcedExit.FindStringSubmatch(comment); m != nil {
			step.wantExit, _ = strconv.Atoi(m[1])
		}
		switch {
		case fields[0] == "bin/runfleet":
			step.args = fields[1:]
		case fields[0] == "await" && len(fields) == 3:
			step.await, step.args = true, fields[1:]
		default:
			continue // make, export, the await function itself
		}
		steps = append(steps, step)
	}
	t.Fatal("README.md: no code block after \"Terminal 2\"")
	return nil
}

// announcedWarning is a WARN line the README tour tells its reader to
// expect: its message contains msg (any message when empty) and its fields
// include attrs; readme is the README's words that announce it.
type announcedWarning struct {
	msg    string
	attrs  map[string]any
	readme string
}

var tourWarnings = []announcedWarning{
	{msg: "GitHub is SIMULATED", readme: "`GitHub is SIMULATED`"},
	{msg: "machines are SIMULATED", readme: "`machines are SIMULATED`"},
	{msg: "operator delete refused: runner is busy", attrs: map[string]any{"pool": "busy-demo"}, readme: "refused: its runner is running a job"},
	{msg: "forced delete: ignoring GitHub error", attrs: map[string]any{"pool": "busy-demo"}, readme: "the log warns it ignored GitHub's refusal"},
	{attrs: map[string]any{"pool": "always-fails"}, readme: "The log warns of every failed create and delete of the always-fails pool"},
	{msg: "no pool serves this job; recorded as unmatched", attrs: map[string]any{"job_id": 7000000009}, readme: "recorded as unmatched, with the reason (and a log warning)"},
}

func (a announcedWarning) matches(rec map[string]any) bool {
	if msg, _ := rec["msg"].(string); !strings.Contains(msg, a.msg) {
		return false
	}
	for k, v := range a.attrs {
		got := rec[k]
		if f, ok := got.(float64); ok { // JSON numbers: job ids are integers
			got = strconv.FormatFloat(f, 'f', -1, 64)
		}
		if fmt.Sprint(got) != fmt.Sprint(v) {
			return false
		}
	}
	return true
}

// TestTourLogsOnlyWhatTheReadmeAnnounces runs the README tour's second
// terminal line by line against `make run`'s server (examples/local.yaml)
// and reads the server's log: every WARN or ERROR must be one the README
// announces (tourWarnings, each held against the README's words). Anything
// else — a conflict loop, a price missing — is a newcomer's first sight of
// something wrong. It also holds the tour's cost step to a cost.
func TestTourLogsOnlyWhatTheReadmeAnnounces(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range tourWarnings {
		if !strings.Contains(string(readme), a.readme) {
			t.Errorf("the README no longer announces %q (%q)", a.msg, a.readme)
		}
	}
	srv, env := startTourServe(t)
	steps := readmeTour(t)
	if len(steps) < 10 {
		t.Fatalf("the README tour has %d runfleet steps; the parser lost them", len(steps))
	}
	said := map[string]string{} // the output of each command, by its line
	for _, s := range steps {
		if s.await {
			srv.waitStatus(t, s.args[0], runner.Status(s.args[1]))
			continue
		}
		args := slices.Clone(s.args)
		for i, a := range args {
			if strings.HasPrefix(a, "examples/") {
				args[i] = "../../" + a
			}
		}
		res := runCLI(t, env, args...)
		if res.code != s.wantExit {
			t.Errorf("%s\nexit %d, want %d:\n%s%s", s.line, res.code, s.wantExit, res.stdout, res.stderr)
		}
		said[strings.Join(s.args, " ")] = res.stdout
	}

	for _, rec := range srv.logs.Lines(t, nil) {
		if level := rec["level"]; level != "WARN" && level != "ERROR" {
			continue
		}
		if !slices.ContainsFunc(tourWarnings, func(a announcedWarning) bool { return a.matches(rec) }) {
			t.Errorf("the tour logged what the README does not announce: %v", rec)
		}
	}

	cost, ok := said["cost"]
	if !ok {
		t.Fatal("the README tour no longer runs `runfleet cost`")
	}
	if !strings.Contains(cost, "linux-x64") || strings.Contains(cost, "unknown price") {
		t.Errorf("cost after the tour: want the linux-x64 pool priced and nothing of unknown price:\n%s", cost)
	}
	if deleted := said["instances list --status deleted"]; !strings.Contains(deleted, "cost <$0.01 (") {
		t.Errorf("instances list --status deleted does not say what the deleted instances cost:\n%s", deleted)
	}
}
