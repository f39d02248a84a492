package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
)

// runfleet backup copies a serving store; runfleet restore puts the copy
// under a stopped server, which restarts on it with everything the copy
// held. While a server holds the store, restore refuses.
func TestBackupOfAServingStoreRestartsWithItsRecords(t *testing.T) {
	dir := t.TempDir()
	srv := startServe(t, filepath.Join(dir, "live"), false)
	env := srv.cliEnv()
	if res := runCLI(t, env, "webhook", "send", payload(t, "queued.json")); res.code != exitOK {
		t.Fatalf("webhook send: %+v", res)
	}
	const name = "runfleet-linux-x64-7000000001-1"
	srv.waitStatus(t, name, runner.StatusRunning)

	backup := filepath.Join(dir, "backup.db")
	res := runCLI(t, env, "backup", backup)
	if res.code != exitOK || !strings.Contains(res.stdout, "checked") {
		t.Fatalf("backup: %+v", res)
	}
	if _, err := os.Stat(backup + ".partial"); !os.IsNotExist(err) {
		t.Errorf("backup left its partial file: %v", err)
	}
	// Without the token the backup is refused, like every operator call.
	if res := runCLI(t, map[string]string{"RUNFLEET_SERVER": srv.url}, "backup", filepath.Join(dir, "nope.db")); res.code != exitFailure {
		t.Errorf("backup without a token: %+v", res)
	}

	restored := filepath.Join(dir, "restored")
	other := startServe(t, restored, false)
	if res := runCLI(t, nil, "restore", backup, "--store-dir", restored); res.code != exitFailure || !strings.Contains(res.stderr, "stop runfleet serve first") {
		t.Errorf("restore under a running server: %+v", res)
	}
	other.stop()
	srv.stop()

	res = runCLI(t, nil, "restore", backup, "--store-dir", restored, "-o", "json")
	var reply struct {
		StoreFile    string `json:"store_file"`
		ReplacedFile string `json:"replaced_file"`
	}
	if res.code != exitOK || json.Unmarshal([]byte(res.stdout), &reply) != nil ||
		reply.StoreFile != filepath.Join(restored, "state.db") || !strings.Contains(reply.ReplacedFile, "before-restore-") {
		t.Fatalf("restore -o json: %+v", res)
	}
	again := startServe(t, restored, true)
	inst := again.waitFor(t, name, "restored", func(*runner.Instance) bool { return true })
	if inst.Status != runner.StatusRunning {
		t.Errorf("restored instance is %s, want running", inst.Status)
	}

	// A file that is not a store is never restored.
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	again.stop()
	if res := runCLI(t, nil, "restore", junk, "--store-dir", restored); res.code != exitFailure {
		t.Errorf("restore of junk: %+v", res)
	}
}
