package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDriverReplicasOnPostgres runs replicas mode small with the faults
// off: two replicas on the driver's own PostgreSQL server, one kill -9 and
// the database's crash and restart. Every job must be served once, and
// the report must name the kill, the restart and what each replica
// answered.
func TestDriverReplicasOnPostgres(t *testing.T) {
	_, bin, provider := buildForDriver(t)
	// Run as root, PostgreSQL runs as the postgres user, which must reach
	// its data inside the run's directory: t.TempDir's parent is private.
	out, err := os.MkdirTemp("", "runfleet-chaos-replicas-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(out) })
	if err := os.Chmod(out, 0o711); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{
		"-bin", bin, "-provider", provider, "-out", filepath.Join(out, "run"), "-seed", "7",
		"-replicas", "2", "-jobs", "16", "-arrival", "16s", "-kills", "1", "-fail-rate", "0", "-hang-rate", "0",
		"-boot-fail-rate", "0", "-lose-rate", "0", "-dup-rate", "0", "-max-runners", "4", "-workers", "2", "-timeout", "4m",
	}, &stdout, &stderr)
	report := stdout.String()
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, report, &stderr)
	}
	for _, want := range []string{
		"2 runfleet serve replicas on one PostgreSQL database; 1 kills",
		"kill -9 #1 at ", "(replica r",
		"PostgreSQL crashed at ",
		"answered 2xx by replica: r1 ",
		"jobs served 1 time:  16\n",
		"leaked machines: 0\n",
		"stuck records: 0\n",
		"elapsed: ",
		"RESULT: no violation",
		"-replicas=2",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}

func TestReplicasFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{
		{"-replicas", "0"},
		{"-replicas", "3", "-outage", "30s"},
		{"-apps", "0"},
	} {
		if code := run(args, &bytes.Buffer{}, &bytes.Buffer{}); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
