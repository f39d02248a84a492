//go:build unix

package external

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// killProcessGroupOnCancel starts the provider as the leader of its own
// process group and, when the call's context ends, kills the whole group:
// a provider's children (a cloud CLI it shells out to) must not outlive it.
// Where the system can, the provider also dies with runfleet
// (processAttributes).
func killProcessGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = processAttributes()
	cmd.Cancel = func() error {
		// The leader is not reaped until Wait returns, so its pid still
		// names this group and cannot have been reused.
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return cmd.Process.Kill()
		}
		// ErrProcessDone lets a provider that exited 0 just as the deadline
		// passed keep its answer; a killed one exits with a signal anyway.
		return os.ErrProcessDone
	}
}
