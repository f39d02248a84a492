package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDriverAgainstRealServe builds the real binary and runs the whole
// driver at a small size, the scale-set runs included: every part must
// finish, stop its child cleanly and find exactly one instance per job.
func TestDriverAgainstRealServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds runfleet and serves real webhooks")
	}
	bin := filepath.Join(t.TempDir(), "runfleet")
	build := exec.Command("go", "build", "-o", bin, "github.com/runfleet/runfleet/cmd/runfleet")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	outFile := filepath.Join(t.TempDir(), "report.md")
	var stdout, stderr bytes.Buffer
	code := run([]string{
		"-bin", bin, "-payload", "../../examples/payloads/queued.json", "-out", outFile,
		"-latency-jobs", "3", "-burst", "25", "-steps", "2", "-big-burst", "30",
		"-clients", "4", "-workers", "2", "-scaleset-latency-jobs", "3", "-timeout", "2m",
	}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	report := stdout.String()
	for _, want := range []string{
		"### Webhook to provider create, 3 jobs one at a time",
		"| burst 1 of 2, same server | 25 | 0 → 25 |",
		"| burst 2 of 2, same server | 25 | 25 → 50 |",
		"| one burst, fresh server | 30 | 0 → 30 |",
		"### Scale-set intake",
		"Through the scale set, 3 jobs one at a time",
		"| one burst through the scale set, fresh server | 25 |",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if n := strings.Count(report, "| yes |"); n != 4 {
		t.Errorf("%d bursts passed the one-instance-per-job check, want 4:\n%s", n, report)
	}
	if strings.Contains(report, "Warnings and errors") {
		t.Errorf("the servers logged warnings or errors:\n%s", report)
	}
	if saved, err := os.ReadFile(outFile); err != nil || string(saved) != report {
		t.Errorf("-out file = %q, %v; want the printed report", saved, err)
	}
}

func TestDriverRefusesAMissingBinary(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"-bin", filepath.Join(t.TempDir(), "absent"), "-payload", "../../examples/payloads/queued.json"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "make runfleet") {
		t.Errorf("exit %d, stderr %q: want 1 and a hint to build runfleet", code, &stderr)
	}
}
