package kubetest

import (
	"strings"
	"testing"
)

// Without the built servers a test fails with what to run — it never
// skips: a Kubernetes test that silently does not run proves nothing.
func TestMissingBinariesFailNamingMakeKube(t *testing.T) {
	t.Setenv("RUNFLEET_KUBE_DIR", t.TempDir())
	_, err := findBinaries()
	if err == nil || !strings.Contains(err.Error(), "make kube") {
		t.Fatalf("findBinaries with an empty cache = %v; want an error naming `make kube`", err)
	}
	if _, err := Start(); err == nil {
		t.Fatal("Start without binaries succeeded")
	}
}

// The cache is keyed by the servers' versions (and build flags), so a
// version bump in infra/kube/tools/go.mod builds afresh.
func TestCacheDirIsKeyedByVersion(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("RUNFLEET_KUBE_DIR", dir)
	_, err := findBinaries()
	if err == nil || !strings.Contains(err.Error(), dir+"/v1.") || !strings.Contains(err.Error(), "-etcd3.") {
		t.Fatalf("findBinaries = %v; want the missing path under %s/<kube version>-etcd<version>-<flags>/", err, dir)
	}
}
