package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDriverAgainstRealServe runs the whole driver against the real binary
// and provider at a small size with the chaos off — no kills, no faults,
// nothing lost — so its outcome depends on no timing: every job must be
// served once and everything must settle. The chaos itself is `make chaos`.
func TestDriverAgainstRealServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds runfleet and the chaos provider and serves real webhooks")
	}
	dir := t.TempDir()
	bin, provider := filepath.Join(dir, "runfleet"), filepath.Join(dir, "chaos-provider")
	for pkg, out := range map[string]string{
		"github.com/runfleet/runfleet/cmd/runfleet":                bin,
		"github.com/runfleet/runfleet/cmd/runfleet-chaos/provider": provider,
	} {
		if msg, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, msg)
		}
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{
		"-bin", bin, "-provider", provider, "-out", filepath.Join(dir, "run"), "-seed", "7",
		"-jobs", "12", "-kills", "0", "-outage", "0", "-fail-rate", "0", "-hang-rate", "0", "-boot-fail-rate", "0",
		"-lose-rate", "0", "-dup-rate", "0.5", "-max-runners", "4", "-workers", "2", "-timeout", "3m",
	}, &stdout, &stderr)
	report := stdout.String()
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, report, &stderr)
	}
	for _, want := range []string{
		"jobs served 1 time:  12\n",
		"jobs served 0 times: 0 \n",
		"leaked machines: 0\n",
		"stuck records: 0\n",
		"RESULT: no violation",
		"replay: go run ./cmd/runfleet-chaos ",
		"-seed=7",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}

func TestDriverRefusesAMissingBinary(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"-bin", filepath.Join(t.TempDir(), "absent"), "-provider", "/bin/true", "-out", t.TempDir(), "-jobs", "1"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "make runfleet") {
		t.Errorf("exit %d, stderr %q: want 1 and a hint to build runfleet", code, &stderr)
	}
}
