package cache

import (
	"testing"

	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
	"github.com/runfleet/runfleet/internal/testenv"
)

// TestMain stops the moto server the S3 tests start and the PostgreSQL
// server the job binding's tests start.
func TestMain(m *testing.M) { testenv.Main(m, pgtest.Stop) }
