//go:build unix && !linux

package external

import "syscall"

// processAttributes: the provider leads its own process group, killed whole
// on timeout. Only Linux is given a death signal here, so elsewhere a
// provider outlives a runfleet that is killed outright.
func processAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
