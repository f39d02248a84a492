//go:build !linux

package kubetest

import "syscall"

func dieWithParent() *syscall.SysProcAttr { return nil }
