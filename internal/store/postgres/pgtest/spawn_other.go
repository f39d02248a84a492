//go:build !linux

package pgtest

import "os/exec"

// Elsewhere there is no parent-death signal: Main stops the server, and a
// test binary killed outright leaves it to be ended by hand.
func startChild(cmd *exec.Cmd) error { return cmd.Start() }
