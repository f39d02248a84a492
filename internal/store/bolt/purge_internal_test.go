package bolt

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"
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

	const marks = 10 // three full batches and a partial one
	for i := 0; i < marks; i++ {
		if _, err := s.MarkDelivery(ctx, "d-"+strconv.Itoa(i), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.MarkDelivery(ctx, "not-due", 2*time.Hour); err != nil {
		t.Fatal(err)
	}
	at = at.Add(time.Hour)
	if n, err := s.PurgeExpired(ctx); err != nil || n != marks {
		t.Fatalf("PurgeExpired = %d, %v; want %d", n, err, marks)
	}
	if n, err := s.PurgeExpired(ctx); err != nil || n != 0 {
		t.Fatalf("second PurgeExpired = %d, %v; want 0", n, err)
	}
	if fresh, err := s.MarkDelivery(ctx, "not-due", time.Hour); err != nil || fresh {
		t.Fatalf("a mark not yet due was purged (MarkDelivery = %v, %v)", fresh, err)
	}
}
