package external_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// TestProviderDiesWithRunfleet: a runfleet killed with kill -9 in the
// middle of a create takes its provider process with it, so the provider
// cannot finish that create after a restarted runfleet has retried it.
// The helper process (this test binary, see holdProviderCall) plays
// runfleet.
func TestProviderDiesWithRunfleet(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pids")
	cfg := externaltest.Config{StateFile: filepath.Join(dir, "state.json"), Hang: []string{"CreateInstance"}, PIDFile: pidFile}
	cfgPath := filepath.Join(dir, "provider.json")
	if err := cfg.Write(cfgPath); err != nil {
		t.Fatal(err)
	}

	helper := exec.Command(os.Args[0])
	helper.Env = append(os.Environ(), heldCallExecutable+"="+fakeProvider, heldCallConfig+"="+cfgPath)
	var stderr bytes.Buffer
	helper.Stderr = &stderr
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed once the helper is reaped, and waitErr is then set.
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = helper.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = helper.Process.Kill()
		<-exited
	})

	provider, child := waitForPIDs(t, pidFile, exited, func() string { return fmt.Sprintf("%v\n%s", waitErr, stderr.String()) })
	// The death signal reaches the provider only; what it started itself
	// is not runfleet's child and is left to this clean-up.
	t.Cleanup(func() {
		for _, pid := range []int{provider, child} {
			if alive(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	if !alive(provider) {
		t.Fatalf("provider %d is not running while the helper's call holds it", provider)
	}

	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited

	// Signal delivery is asynchronous: poll, with a deadline far beyond
	// any plausible delay, rather than assert a speed.
	deadline := time.Now().Add(30 * time.Second)
	for alive(provider) {
		if time.Now().After(deadline) {
			t.Fatalf("provider %d still runs 30s after its runfleet was killed", provider)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitForPIDs waits until the hanging provider has written its pids, or
// fails the test, with the helper's outcome, if the helper ends first.
func waitForPIDs(t *testing.T, pidFile string, exited <-chan struct{}, outcome func() string) (provider, child int) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if provider, child, err := externaltest.ReadPIDs(pidFile); err == nil {
			return provider, child
		}
		select {
		case <-exited:
			t.Fatalf("the helper ended before its provider call hung: %s", outcome())
		case <-deadline:
			t.Fatal("the provider wrote no pids within 60s")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
