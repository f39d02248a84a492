package bolt

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// More due records than one purge transaction holds are all removed, over
// several transactions.
func TestPurgeExpiredCrossesBatches(t *testing.T) {
	defer func(old int) { purgeBatchSize = old }(purgeBatchSize)
	purgeBatchSize = 3

	ctx := context.Background()
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := Open(filepath.Join(t.TempDir(), "runfleet.db"), WithClock(func() time.Time { return at }))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	closeJob := func(id int64, keep time.Duration) {
		t.Helper()
		j := &runner.Job{ID: id, RunAttempt: 1, Pool: "p", Status: runner.JobClosed, QueuedAt: at, ExpiresAt: at.Add(keep)}
		if err := s.CreateJob(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	const due = 10 // three full batches and a partial one
	for id := int64(1); id <= due; id++ {
		closeJob(id, time.Minute)
	}
	closeJob(100, 2*time.Hour)
	at = at.Add(time.Hour)
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
