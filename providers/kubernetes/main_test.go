package kubernetes_test

import (
	"os"
	"testing"

	"github.com/runfleet/runfleet/internal/kubetest"
)

// The tests run against a real kube-apiserver on etcd (internal/kubetest),
// one per test process, each test in a namespace of its own.
func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }
