//go:build unix

package external_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// TestHungCallIsKilledWithItsChildren: a call past its timeout is killed,
// and so is every process the provider started.
func TestHungCallIsKilledWithItsChildren(t *testing.T) {
	f := newFixture(t, externaltest.Config{}, map[string]any{"timeout": "2s"})
	pidFile := filepath.Join(f.dir, "pids")
	f.setConfig(externaltest.Config{Hang: []string{"GetInstance"}, PIDFile: pidFile})

	_, err := f.provider.GetInstance(context.Background(), "fk-1")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung get = %v, want context.DeadlineExceeded", err)
	}
	if fault := providers.Fault(err); !strings.Contains(fault, "killed after") {
		t.Errorf("fault %q does not say the call was killed", fault)
	}
	assertGone(t, pidFile)
}

// TestHungCreateIsKilledWhenTheCallerGivesUp: create has no timeout of its
// own; the caller's context (the pool's bootstrap timeout) bounds it.
func TestHungCreateIsKilledWhenTheCallerGivesUp(t *testing.T) {
	f := newFixture(t, externaltest.Config{}, map[string]any{"timeout": "1ms"})
	pidFile := filepath.Join(f.dir, "pids")
	f.setConfig(externaltest.Config{Hang: []string{"CreateInstance"}, PIDFile: pidFile})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Give up once the provider is surely hanging, child and all; the
		// 1ms call timeout must not have applied to a create.
		for {
			if _, err := os.Stat(pidFile); err == nil {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	_, err := f.provider.CreateInstance(ctx, createRequest("m-1"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("hung create = %v, want context.Canceled", err)
	}
	assertGone(t, pidFile)
}

// assertGone checks that both processes named in pidFile have ended.
func assertGone(t *testing.T, pidFile string) {
	t.Helper()
	provider, child, err := externaltest.ReadPIDs(pidFile)
	if err != nil {
		t.Fatalf("the hanging provider wrote no pids: %v", err)
	}
	for _, pid := range []int{provider, child} {
		// SIGKILL is delivered asynchronously; allow it a moment.
		deadline := time.Now().Add(10 * time.Second)
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d is still running after the call was killed", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// alive reports whether pid runs; a zombie (dead, waiting for a parent
// that may never reap it in a container) does not.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) && !hasProc()
	}
	// The state follows the parenthesised command name.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
}

func hasProc() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}
