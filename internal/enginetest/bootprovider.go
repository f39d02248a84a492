package enginetest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// BootProvider is internal/metadata/testdata/bootprovider built for a test:
// a GARM external provider whose create plays the booting machine too — it
// fetches the machine's JIT credentials with the instance token and reports
// its progress, as GARM's cloud-init does — and records what it did.
type BootProvider struct {
	// Executable and ConfigFile are the pool's provider_executable and
	// config_file.
	Executable string
	ConfigFile string
	// Machines holds <instance>.json per machine and <instance>.boot.json,
	// what the machine did.
	Machines string
}

// BuildBootProvider compiles the boot provider into a temporary directory
// (go test puts the go command on PATH).
func BuildBootProvider(tb testing.TB) BootProvider {
	tb.Helper()
	dir := tb.TempDir()
	p := BootProvider{
		Executable: filepath.Join(dir, "bootprovider"),
		ConfigFile: filepath.Join(dir, "provider.json"),
		Machines:   filepath.Join(dir, "machines"),
	}
	build := exec.Command("go", "build", "-o", p.Executable, "github.com/runfleet/runfleet/internal/metadata/testdata/bootprovider")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		tb.Fatalf("build the boot provider: %v\n%s", err, out)
	}
	if err := os.Mkdir(p.Machines, 0o700); err != nil {
		tb.Fatal(err)
	}
	cfg, err := json.Marshal(map[string]string{"dir": p.Machines})
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p.ConfigFile, cfg, 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// BootRecord is what the boot provider's machine did (<instance>.boot.json).
type BootRecord struct {
	// Stdin is the BootstrapInstance the provider was given.
	Stdin       string `json:"stdin"`
	Token       string `json:"token"`
	MetadataURL string `json:"metadata_url"`
	CallbackURL string `json:"callback_url"`
	// Files are the JIT credential files the machine fetched, by name.
	Files       map[string]string `json:"files"`
	ServiceName string            `json:"service_name"`
	UnitFile    string            `json:"unit_file"`
	// Statuses are the HTTP statuses of the machine's calls, by step.
	Statuses map[string]int `json:"statuses"`
}

// Record reads what instance's machine did, failing the test if it left no
// record.
func (p BootProvider) Record(tb testing.TB, instance string) BootRecord {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(p.Machines, instance+".boot.json"))
	if err != nil {
		tb.Fatalf("the boot provider left no record for %s: %v", instance, err)
	}
	var rec BootRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		tb.Fatalf("boot record of %s: %v", instance, err)
	}
	return rec
}
