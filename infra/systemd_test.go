package infra

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const systemdUnitPath = "../deploy/systemd/runfleet.service"

// unitSettings reads a unit file's Key=Value lines; a key set more than
// once keeps every value.
func unitSettings(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	settings := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "[") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			settings[k] = append(settings[k], v)
		}
	}
	return settings
}

// The unit runs serve as an unprivileged user of its own, with only its
// state directory writable, no way to gain privileges, and a read-only
// system; and it stops serve the way serve shuts down gracefully.
func TestSystemdUnitIsHardened(t *testing.T) {
	s := unitSettings(t, systemdUnitPath)
	want := map[string]string{
		"DynamicUser":             "yes",
		"StateDirectory":          "runfleet",
		"WorkingDirectory":        "/var/lib/runfleet",
		"NoNewPrivileges":         "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"CapabilityBoundingSet":   "",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"KillSignal":              "SIGTERM",
		"Restart":                 "on-failure",
	}
	for k, v := range want {
		if got := s[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s=%q, want %q", k, got, v)
		}
	}
	execStart := s["ExecStart"]
	if len(execStart) != 1 || !strings.Contains(execStart[0], " serve --config /etc/runfleet/") {
		t.Errorf("ExecStart=%q, want runfleet serve --config /etc/runfleet/…", execStart)
	}
}

// systemd-analyze verify accepts the unit without a warning (it exits 0
// on unknown keys, but says so). The binary the unit names is not
// installed here: the check runs on a copy pointing at one that is.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed; make lint runs it where it is")
	}
	data, err := os.ReadFile(systemdUnitPath)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), "runfleet.service")
	if err := os.WriteFile(unit, []byte(strings.ReplaceAll(string(data), "/usr/local/bin/runfleet", bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil || strings.Contains(string(out), filepath.Base(unit)) {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
