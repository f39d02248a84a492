package postgres_test

import (
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/store/postgres"
	"github.com/runfleet/runfleet/internal/store/storetest"
	"github.com/runfleet/runfleet/internal/testclock"
)

func TestPurgeExpiredRemovesLapsedOnceOnlyLeases(t *testing.T) {
	clock := testclock.At(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s, _ := openTemp(t, postgres.WithClock(clock.Now))
	storetest.LeasePurge(t, s, clock)
}
