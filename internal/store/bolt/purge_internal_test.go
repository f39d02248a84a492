package bolt

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
)

// More due records than one purge transaction holds are all removed, over
// several transactions.
func TestPurgeExpiredCrossesBatches(t *testing.T) {
	defer func(old int) { purgeBatchSize = old }(purgeBatchSize)
	purgeBatchSize = 3

	ctx := context.Background()
	clock := testclock.At(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := Open(filepath.Join(t.TempDir(), "runfleet.db"), WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	closeJob := func(id int64, keep time.Duration) {
		t.Helper()
		j := &runner.Job{ID: id, RunAttempt: 1, Pool: "p", Status: runner.JobClosed, QueuedAt: clock.Now(), ExpiresAt: clock.Now().Add(keep)}
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	const due = 10 // three full batches and a partial one
	for id := int64(1); id <= due; id++ {
		closeJob(id, time.Minute)
	}
	closeJob(100, 2*time.Hour)
	clock.Advance(time.Hour)
	if n, err := s.PurgeExpired(ctx); err != nil || n != due {
		t.Fatalf("PurgeExpired = %d, %v; want %d", n, err, due)
	}
	if n, err := s.PurgeExpired(ctx); err != nil || n != 0 {
		t.Fatalf("second PurgeExpired = %d, %v; want 0", n, err)
	}
	if _, err := s.GetJob(ctx, runner.JobKey(100, 1)); err != nil {
		t.Fatalf("a job not yet due was purged: %v", err)
	}
}
