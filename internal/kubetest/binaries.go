// Package kubetest starts a real Kubernetes API server (kube-apiserver on
// etcd, the binaries infra/test/install-kube.sh builds) once per test
// process, and plays the parts of a cluster that are not there: the
// kubelet (a pod's phase through the pods/status subresource, binding to
// nodes), evictions and lost nodes.
//
// A test that needs it fails — never skips — when the binaries are absent:
// `make kube` (a prerequisite of `make test`) builds them.
package kubetest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Binaries are the server programs a Server runs.
type Binaries struct {
	APIServer string
	Etcd      string
}

// findBinaries asks install-kube.sh where its cache keeps the binaries
// (RUNFLEET_KUBE_DIR or <repo>/.cache/kube, by version) and checks they are
// there.
func findBinaries() (Binaries, error) {
	root, err := repoRoot()
	if err != nil {
		return Binaries{}, err
	}
	script := filepath.Join(root, "infra", "test", "install-kube.sh")
	out, err := exec.Command(script, "--print-dir").Output()
	if err != nil {
		return Binaries{}, fmt.Errorf("kubetest: %s --print-dir: %w", script, err)
	}
	dir := strings.TrimSpace(string(out))
	b := Binaries{APIServer: filepath.Join(dir, "kube-apiserver"), Etcd: filepath.Join(dir, "etcd")}
	for _, f := range []string{b.APIServer, b.Etcd} {
		if st, err := os.Stat(f); err != nil || st.Mode()&0o111 == 0 {
			return Binaries{}, fmt.Errorf("kubetest: %s is missing: run `make kube` (infra/test/install-kube.sh) to build the test API server", f)
		}
	}
	return b, nil
}

// repoRoot is the nearest directory above the working directory (a test's
// package directory) holding infra/test/install-kube.sh.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "infra", "test", "install-kube.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("kubetest: cannot find the repository root (infra/test/install-kube.sh) above the working directory")
		}
		dir = parent
	}
}
