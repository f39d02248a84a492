package cacheagent

import (
	"os"
	"testing"

	"github.com/runfleet/runfleet/internal/testenv"
)

// TestMain stops the moto server the S3 tests start. Started again as
// BuildKit's cache client (buildkit_test.go), the test binary is that
// client only, a process of its own as on a runner machine.
func TestMain(m *testing.M) {
	if os.Getenv(buildKitClientEnv) != "" {
		os.Exit(runBuildKitClient())
	}
	testenv.Main(m)
}
