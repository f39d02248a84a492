package bolt

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/store/storetest"
	"github.com/runfleet/runfleet/internal/testclock"
)

// In batches of two, so the purge crosses transactions.
func TestPurgeExpiredRemovesLapsedOnceOnlyLeases(t *testing.T) {
	defer func(old int) { purgeBatchSize = old }(purgeBatchSize)
	purgeBatchSize = 2

	clock := testclock.At(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := Open(filepath.Join(t.TempDir(), "runfleet.db"), WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	storetest.LeasePurge(t, s, clock)
}
