package cacheagent

import (
	"testing"

	"github.com/runfleet/runfleet/internal/testenv"
)

// TestMain stops the moto server the S3 tests start.
func TestMain(m *testing.M) { testenv.Main(m) }
