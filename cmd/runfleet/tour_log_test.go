package main

import (
	"bufio"
	"os"
	"regexp"
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
			step.wantExit = int(m[1][0] - '0')
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

// TestTourLogsOnlyWhatTheReadmeAnnounces runs the README tour's second
// terminal line by line against `make run`'s server (examples/local.yaml)
// and reads the server's log: every WARN or ERROR must be one the README
// announces — the simulations named at start, the always-fails pool's
// failed creates and deletes, the busy runner's refused delete and the
// unmatched typo. Anything else (a conflict loop, a price missing) is a
// newcomer's first sight of something wrong.
func TestTourLogsOnlyWhatTheReadmeAnnounces(t *testing.T) {
	srv, env := startTourServe(t)
	steps := readmeTour(t)
	if len(steps) < 10 {
		t.Fatalf("the README tour has %d runfleet steps; the parser lost them", len(steps))
	}
	for _, s := range steps {
		if s.await {
			srv.waitStatus(t, s.args[0], runner.Status(s.args[1]))
			continue
		}
		args := s.args
		for i, a := range args {
			if strings.HasPrefix(a, "examples/") {
				args[i] = "../../" + a
			}
		}
		res := runCLI(t, env, args...)
		if res.code != s.wantExit {
			t.Errorf("%s\nexit %d, want %d:\n%s%s", s.line, res.code, s.wantExit, res.stdout, res.stderr)
		}
		t.Logf("$ runfleet %s\n%s%s", strings.Join(s.args, " "), res.stdout, res.stderr)
	}
	for _, rec := range srv.logs.Lines(t, nil) {
		level, _ := rec["level"].(string)
		if level != "WARN" && level != "ERROR" {
			continue
		}
		t.Logf("%s %v", level, rec)
	}
}
