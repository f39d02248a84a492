// Package externaltest provides runfleet's one fake GARM external provider:
// a real executable (fakeprovider, built by Build) that keeps its machines
// in a JSON state file under an flock, records every call it gets, and
// misbehaves on request — hangs, bad JSON, invalid statuses, plain-text
// faults, failing exits, ignored deletes by name — so tests can drive
// providers/external and `runfleet provider check` through every rule of the
// protocol. With BootDir it plays each machine it creates booting against
// runfleet's metadata and callback endpoints; with a seed and fault rates
// it fails or hangs a repeatable share of creates and deletes, before or
// after their effect, and logs every change to an event log (Replay) — the
// chaos run's cloud (cmd/runfleet-chaos), whose machines outlive every
// runfleet process.
package externaltest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Config is the fake provider's config file (GARM_PROVIDER_CONFIG_FILE):
// where it keeps state and how it misbehaves. The zero value of every
// behaviour field is a conformant provider.
type Config struct {
	// StateFile holds the machines (required); <StateFile>.lock is its
	// lock.
	StateFile string `json:"state_file"`
	// EventLog, when set, gets one JSON line per change and injected fault
	// (Event; ReadEvents, Replay).
	EventLog string `json:"event_log,omitempty"`
	// RecordFile, when set, gets one JSON line per call: its command,
	// environment and stdin (see Record).
	RecordFile string `json:"record_file,omitempty"`
	// PIDFile, when set, gets "<provider pid> <child pid>" from a hanging
	// call, which starts a child in its process group before hanging.
	PIDFile string `json:"pid_file,omitempty"`

	// Hang lists commands that never finish.
	Hang []string `json:"hang,omitempty"`
	// Slow maps commands to a delay (a Go duration such as "200ms") before
	// they do anything else.
	Slow map[string]string `json:"slow,omitempty"`
	// Fail maps commands to the exit code they fail with, after printing a
	// valid-looking instance on stdout and "fake failure" on stderr.
	Fail map[string]int `json:"fail,omitempty"`
	// FailStderrBytes adds that much filler to a failing call's stderr.
	FailStderrBytes int `json:"fail_stderr_bytes,omitempty"`
	// BadJSON lists commands that print malformed JSON.
	BadJSON []string `json:"bad_json,omitempty"`
	// Status, when set, is the status every reported instance has.
	Status string `json:"status,omitempty"`
	// Fault is set (properly base64-encoded) as every reported instance's
	// provider_fault.
	Fault string `json:"fault,omitempty"`
	// PlainTextFault is put into provider_fault as plain text, breaking
	// the protocol (it must be base64).
	PlainTextFault string `json:"plain_text_fault,omitempty"`
	// OmitProviderID reports instances without a provider_id.
	OmitProviderID bool `json:"omit_provider_id,omitempty"`
	// ListOutput replaces ListInstances' answer: "null" or "empty" (no
	// output at all).
	ListOutput string `json:"list_output,omitempty"`
	// IgnoreDeleteByName makes DeleteInstance by name exit 0 without
	// deleting anything: the machine keeps running, and only listing
	// reveals it.
	IgnoreDeleteByName bool `json:"ignore_delete_by_name,omitempty"`
	// RequireTools makes CreateInstance pick the runner download for the
	// machine's os_type and arch from the bootstrap params' tools, and
	// fail as GARM's providers do ("failed to get tools") when none fits.
	RequireTools bool `json:"require_tools,omitempty"`
	// BootDir, when set, makes CreateInstance play the machine too before
	// it answers, as GARM's cloud-init does: with the BootstrapInstance's
	// instance token it reports installing, fetches the JIT credential
	// files, the service name and the unit file from the metadata URL, and
	// reports system info and idle. What the machine did goes to
	// <BootDir>/<name>.boot.json (read it with ReadBoot).
	BootDir string `json:"boot_dir,omitempty"`
	// AllowDuplicateNames makes a create of a name in use make a second
	// machine, as most clouds do (EC2 tags, say), instead of failing with
	// GARM's duplicate exit code.
	AllowDuplicateNames bool `json:"allow_duplicate_names,omitempty"`

	// Seed makes each call's fault draw repeatable (see Draw).
	Seed int64 `json:"seed,omitempty"`
	// FailRate is the share of CreateInstance and DeleteInstance calls that
	// fail; half of them fail after doing their work.
	FailRate float64 `json:"fail_rate,omitempty"`
	// HangRate is the share of those calls that hang for HangFor — longer
	// than the caller's timeout, so the caller must kill them — half of them
	// after doing their work.
	HangRate float64       `json:"hang_rate,omitempty"`
	HangFor  time.Duration `json:"hang_for,omitempty"`
}

// Boot is what a machine did when it booted (Config.BootDir).
type Boot struct {
	// Stdin is the BootstrapInstance the provider was given.
	Stdin       string `json:"stdin"`
	Token       string `json:"token"`
	MetadataURL string `json:"metadata_url"`
	CallbackURL string `json:"callback_url"`
	// Files are the JIT credential files the machine fetched, by name.
	Files       map[string]string `json:"files"`
	ServiceName string            `json:"service_name"`
	UnitFile    string            `json:"unit_file"`
	// Statuses are the HTTP statuses of the machine's calls, by step
	// ("error": 1 when the boot failed).
	Statuses map[string]int `json:"statuses"`
}

// ReadBoot reads what the machine named instance did, from dir (the
// config's BootDir).
func ReadBoot(dir, instance string) (Boot, error) {
	var b Boot
	data, err := os.ReadFile(filepath.Join(dir, instance+".boot.json"))
	if err != nil {
		return b, err
	}
	err = json.Unmarshal(data, &b)
	return b, err
}

// Write saves c as a config file at path, in one rename: the provider reads
// it on every call, so a test (or the chaos driver, turning faults off) may
// rewrite it while calls run.
func (c Config) Write(path string) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomically(path, data)
}

// ReadConfig reads a config file written by Write.
func ReadConfig(path string) (Config, error) {
	var c Config
	data, err := os.ReadFile(path)
	if err != nil {
		return c, err
	}
	err = json.Unmarshal(data, &c)
	return c, err
}

// Record is one call the fake provider received.
type Record struct {
	Command string            `json:"command"`
	Env     map[string]string `json:"env"`
	Stdin   string            `json:"stdin"`
}

// ReadRecords reads every call recorded in path, oldest first.
func ReadRecords(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("record %d: %w", len(out)+1, err)
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// ReadPIDs reads the pids a hanging call wrote to its PIDFile.
func ReadPIDs(path string) (provider, child int, err error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return 0, 0, fmt.Errorf("pid file %s: %q", path, data)
	}
	if provider, err = strconv.Atoi(fields[0]); err != nil {
		return 0, 0, err
	}
	child, err = strconv.Atoi(fields[1])
	return provider, child, err
}

// fakeProviderPackage is the fake provider's import path.
const fakeProviderPackage = "github.com/runfleet/runfleet/providers/external/externaltest/fakeprovider"

// Build compiles the fake provider into dir and returns its path. It runs
// `go build`, so it works from any test in this module (go test puts the
// go command on PATH); call it once per test binary, e.g. in TestMain.
func Build(dir string) (string, error) {
	out := filepath.Join(dir, "fakeprovider")
	cmd := exec.Command("go", "build", "-o", out, fakeProviderPackage)
	// No cgo: faster, and nothing in it needs C.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build the fake provider: %w\n%s", err, msg.String())
	}
	return out, nil
}

// Main builds the fake provider once for a test binary, stores its path in
// *binary, runs the tests and removes the build: call it from TestMain.
func Main(m *testing.M, binary *string) {
	dir, err := os.MkdirTemp("", "runfleet-fakeprovider")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *binary, err = Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
