package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// The Makefile stamps version, commit and date with -ldflags -X; whatever
// it stamps is what `runfleet version` prints, in text and JSON.
func TestVersionPrintsTheStampedBuild(t *testing.T) {
	saved := [3]string{version, commit, date}
	t.Cleanup(func() { version, commit, date = saved[0], saved[1], saved[2] })
	version, commit, date = "v1.2.3", "0123456789ab", "2025-01-02T03:04:05Z"

	res := runCLI(t, nil, "version")
	for _, want := range []string{"runfleet v1.2.3 (", "commit 0123456789ab", "2025-01-02T03:04:05Z"} {
		if res.code != exitOK || !strings.Contains(res.stdout, want) {
			t.Errorf("version = %q, want it to contain %q", res.stdout, want)
		}
	}
	res = runCLI(t, nil, "version", "-o", "json")
	var v map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &v); err != nil {
		t.Fatalf("version -o json: %v: %q", err, res.stdout)
	}
	if v["version"] != "v1.2.3" || v["commit"] != "0123456789ab" || v["date"] != "2025-01-02T03:04:05Z" {
		t.Errorf("version -o json = %v", v)
	}
}
