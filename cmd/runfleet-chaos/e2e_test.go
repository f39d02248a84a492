package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDriverAgainstRealServe runs the whole driver against the real binary
// and provider at a small size with the chaos off — no kills, no faults,
// nothing lost — so its outcome depends on no timing: every job must be
// served once and everything must settle. The chaos itself is `make chaos`.
func TestDriverAgainstRealServe(t *testing.T) {
	dir, bin, provider := buildForDriver(t)
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

// TestDriverScaleSetAgainstRealServe is the same with a scale-set pool:
// jobs queued into the fake Actions service's scale set, which runfleet's
// listener long-polls, taken by the scale set's own runners; no kill, no
// fault.
func TestDriverScaleSetAgainstRealServe(t *testing.T) {
	dir, bin, provider := buildForDriver(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{
		"-bin", bin, "-provider", provider, "-out", filepath.Join(dir, "run"), "-seed", "7", "-intake", "scaleset",
		"-actions-faults=false", "-jobs", "12", "-kills", "0", "-fail-rate", "0", "-hang-rate", "0", "-boot-fail-rate", "0",
		"-max-runners", "4", "-workers", "2", "-timeout", "3m",
	}, &stdout, &stderr)
	report := stdout.String()
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, report, &stderr)
	}
	for _, want := range []string{
		"intake: scaleset",
		"jobs served 1 time:  12\n",
		"leaked machines: 0\n",
		"scale set chaos-scale: 0 runner(s) left, 0 message(s) never acknowledged",
		"listener polling again after each restart (first poll answered; limit 1m0s): no restart",
		"RESULT: no violation",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}

// TestDriverOutageIsRecoveredFromTheDeliveryLog runs the outage alone,
// small: runfleet down for 10 s while jobs arrive, the deliveries that
// fail meanwhile never resent. Every one must come back through
// runfleet's reconcile passes, read from the App's delivery log.
func TestDriverOutageIsRecoveredFromTheDeliveryLog(t *testing.T) {
	dir, bin, provider := buildForDriver(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{
		"-bin", bin, "-provider", provider, "-out", filepath.Join(dir, "run"), "-seed", "7",
		"-jobs", "16", "-arrival", "16s", "-kills", "0", "-outage", "10s", "-fail-rate", "0", "-hang-rate", "0",
		"-boot-fail-rate", "0", "-lose-rate", "0", "-dup-rate", "0", "-max-runners", "4", "-workers", "2", "-timeout", "3m",
	}, &stdout, &stderr)
	report := stdout.String()
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, report, &stderr)
	}
	m := regexp.MustCompile(`recovered by runfleet from the delivery log: (\d+) of (\d+) lost`).FindStringSubmatch(report)
	if m == nil || m[1] != m[2] || m[2] == "0" {
		t.Fatalf("want some deliveries lost in the outage and all of them recovered:\n%s", report)
	}
	t.Log(m[0])
	for _, want := range []string{"outage: kill -9 #1 at ", "jobs served 1 time:  16\n", "RESULT: no violation"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}

// buildForDriver builds runfleet and the chaos provider into a temporary
// directory, or skips a short run.
func buildForDriver(t *testing.T) (dir, bin, provider string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds runfleet and the fake provider and serves real webhooks")
	}
	dir = t.TempDir()
	bin, provider = filepath.Join(dir, "runfleet"), filepath.Join(dir, "chaos-provider")
	for pkg, out := range map[string]string{
		"github.com/runfleet/runfleet/cmd/runfleet":                                 bin,
		"github.com/runfleet/runfleet/providers/external/externaltest/fakeprovider": provider,
	} {
		if msg, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, msg)
		}
	}
	return dir, bin, provider
}

func TestDriverRefusesAMissingBinary(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run([]string{"-bin", filepath.Join(t.TempDir(), "absent"), "-provider", "/bin/true", "-out", t.TempDir(), "-jobs", "1"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "make runfleet") {
		t.Errorf("exit %d, stderr %q: want 1 and a hint to build runfleet", code, &stderr)
	}
}
