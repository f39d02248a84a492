//go:build tools

// Package tools pins the servers' main packages so `go mod tidy` keeps
// their dependencies; install-kube.sh builds them by import path.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
