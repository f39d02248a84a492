package dynamodb

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testenv"
)

// DynamoDB Local never sweeps TTL and the real sweeper is days late: an
// expired deleted record must read as absent, as CreateInstance treats it.
func TestExpiredDeletedRecordReadsAsNotFound(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, testenv.DynamoDB(t))
	inst := testInstance("p", 1)
	mustCreate(t, s, inst)
	done := mustMove(t, s, inst, toDeleted...)

	if _, err := s.GetInstance(ctx, inst.Name); err != nil {
		t.Fatalf("deleted but unexpired: %v", err)
	}
	s.now = func() time.Time { return done.ExpiresAt.Add(time.Millisecond) }
	if got, err := s.GetInstance(ctx, inst.Name); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired: got %+v, %v; want ErrNotFound", got, err)
	}
	// A live instance never expires, whatever ExpiresAt a writer left on it.
	live := testInstance("p", 2)
	live.ExpiresAt = time.Now().Add(-time.Hour)
	mustCreate(t, s, live)
	if _, err := s.GetInstance(ctx, live.Name); err != nil {
		t.Fatalf("live instance with a past ExpiresAt: %v", err)
	}
	if err := s.CreateInstance(ctx, store.Admission{Instance: testInstance("p", 2), MaxRunners: 10}); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("create over a live instance with a past ExpiresAt: got %v, want ErrAlreadyExists", err)
	}
}

func TestStoredTimesSortAsText(t *testing.T) {
	zone := time.FixedZone("UTC-3", -3*3600)
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, zone)
	times := []time.Time{
		base,
		base.Add(time.Nanosecond),
		base.Add(100 * time.Millisecond),
		base.Add(time.Second),
		base.Add(-time.Nanosecond),
		base.Add(3 * time.Hour), // crosses midnight UTC
	}
	sorted := append([]time.Time(nil), times...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Before(sorted[j]) })
	texts := make([]string, len(times))
	for i, tm := range times {
		texts[i] = formatTime(tm)
	}
	sort.Strings(texts)
	for i, tm := range sorted {
		if texts[i] != formatTime(tm) {
			t.Fatalf("text order %v differs from time order at %d", texts, i)
		}
		back, err := parseTime(formatTime(tm))
		if err != nil || !back.Equal(tm) {
			t.Fatalf("round trip of %v = %v, %v", tm, back, err)
		}
	}
}

func TestTTLSecondsRoundsUp(t *testing.T) {
	for _, c := range []struct {
		at   time.Time
		want int64
	}{
		{time.Unix(100, 0), 100},
		{time.Unix(100, 1), 101},
		{time.Unix(100, 999_999_999), 101},
	} {
		if got := ttlSeconds(c.at); got != c.want {
			t.Errorf("ttlSeconds(%v) = %d, want %d", c.at, got, c.want)
		}
	}
	var zero runner.Instance
	if formatTime(zero.ExpiresAt) != "" {
		t.Error("a zero time must not be stored")
	}
}
