// Package cloud is the chaos run's pretend compute cloud, shared by the
// GARM provider executable (cmd/runfleet-chaos/provider), which changes it,
// and the driver, which reads it. Machines are entries in a JSON state file
// guarded by an flock, so they outlive every runfleet process; every create
// and delete is appended to an event log the driver replays to find the
// peak number of live machines and names that were ever live twice.
package cloud

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// Config is the provider's config file (GARM_PROVIDER_CONFIG_FILE). The
// provider reads it on every call, so the driver turns faults off at the end
// of the chaos by rewriting it.
type Config struct {
	StateFile string `json:"state_file"`
	LockFile  string `json:"lock_file"`
	EventLog  string `json:"event_log"`
	// Seed makes each call's fault draw repeatable (see Draw).
	Seed int64 `json:"seed"`
	// FailRate is the share of CreateInstance and DeleteInstance calls that
	// fail; half of them fail after doing their work.
	FailRate float64 `json:"fail_rate"`
	// HangRate is the share of those calls that hang for HangFor — longer
	// than runfleet's timeouts, so runfleet must kill them — half of them
	// after doing their work.
	HangRate float64       `json:"hang_rate"`
	HangFor  time.Duration `json:"hang_for"`
	// IgnoreDeleteByName makes a delete addressed by name (not provider id)
	// answer success and leave the machine running, as some clouds' GARM
	// providers do.
	IgnoreDeleteByName bool `json:"ignore_delete_by_name"`
}

// ReadConfig reads a Config written by WriteConfig.
func ReadConfig(path string) (Config, error) {
	var c Config
	b, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	if c.StateFile == "" || c.LockFile == "" || c.EventLog == "" {
		return c, fmt.Errorf("%s: state_file, lock_file and event_log are required", path)
	}
	return c, nil
}

// WriteConfig replaces the file at path in one rename, so a provider
// reading it mid-change sees the old config or the new, never half of one.
func WriteConfig(path string, c Config) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomically(path, b)
}

func writeAtomically(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
