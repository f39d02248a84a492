package enginetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// BootProvider is the fake GARM external provider (externaltest's
// fakeprovider) built for a test with BootDir set: its create plays the
// booting machine too — it fetches the machine's JIT credentials with the
// instance token and reports its progress, as GARM's cloud-init does — and
// records what it did.
type BootProvider struct {
	// Executable and ConfigFile are the pool's provider_executable and
	// config_file.
	Executable string
	ConfigFile string
	// Machines holds <instance>.boot.json per machine: what it did.
	Machines string
}

// BuildBootProvider compiles the fake provider into a temporary directory
// (go test puts the go command on PATH) and configures it to boot its
// machines.
func BuildBootProvider(tb testing.TB) BootProvider {
	tb.Helper()
	dir := tb.TempDir()
	bin, err := externaltest.Build(dir)
	if err != nil {
		tb.Fatal(err)
	}
	p := BootProvider{
		Executable: bin,
		ConfigFile: filepath.Join(dir, "provider.json"),
		Machines:   filepath.Join(dir, "machines"),
	}
	if err := os.Mkdir(p.Machines, 0o700); err != nil {
		tb.Fatal(err)
	}
	cfg := externaltest.Config{StateFile: filepath.Join(dir, "state.json"), BootDir: p.Machines}
	if err := cfg.Write(p.ConfigFile); err != nil {
		tb.Fatal(err)
	}
	return p
}

// Booted reports whether instance's machine has booted (its record is
// written).
func (p BootProvider) Booted(instance string) bool {
	_, err := os.Stat(filepath.Join(p.Machines, instance+".boot.json"))
	return err == nil
}

// Record reads what instance's machine did, failing the test if it left no
// record.
func (p BootProvider) Record(tb testing.TB, instance string) externaltest.Boot {
	tb.Helper()
	rec, err := externaltest.ReadBoot(p.Machines, instance)
	if err != nil {
		tb.Fatalf("the boot provider left no record for %s: %v", instance, err)
	}
	return rec
}
