//go:build !unix

package external

import "os/exec"

// killProcessGroupOnCancel kills only the provider process where process
// groups do not exist (exec.CommandContext's default).
func killProcessGroupOnCancel(*exec.Cmd) {}
