package external

import "syscall"

// processAttributes: the provider leads its own process group (killed
// whole on timeout) and gets SIGKILL when its parent dies. Without the
// death signal a provider outlives a runfleet killed with kill -9 and may
// finish a create after runfleet's retry has made a second machine of the
// same name. The kernel sends it when the parent THREAD exits, hence
// runPinned. The provider's own children are not covered: they are killed
// with its group only while runfleet lives to do it.
func processAttributes() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
