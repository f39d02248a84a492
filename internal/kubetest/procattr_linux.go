package kubetest

import "syscall"

// dieWithParent kills a server when the test process dies, however it
// dies: a killed `go test` must not leave servers behind.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
