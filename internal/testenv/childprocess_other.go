//go:build !linux

package testenv

import "os/exec"

// Elsewhere there is no parent-death signal: Main stops the servers, and a
// test binary killed outright leaves them to be ended by hand.
func startChildProcess(cmd *exec.Cmd) error {
	return cmd.Start()
}
