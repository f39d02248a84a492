package engine

import (
	"fmt"
	"testing"
	"time"
)

// The remembered queued times are bounded: past maxQueuedTimes the oldest
// is forgotten (its stage then costs a read), never the newest.
func TestQueuedTimesForgetTheOldestFirst(t *testing.T) {
	var q queuedTimes
	base := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for i := range maxQueuedTimes + 10 {
		q.remember(fmt.Sprintf("i-%d", i), base.Add(time.Duration(i)*time.Second))
	}
	if len(q.at) != maxQueuedTimes {
		t.Fatalf("%d entries, want at most %d", len(q.at), maxQueuedTimes)
	}
	for i := range 10 {
		if _, ok := q.lookup(fmt.Sprintf("i-%d", i), false); ok {
			t.Errorf("i-%d still remembered after %d newer entries", i, maxQueuedTimes)
		}
	}
	last := fmt.Sprintf("i-%d", maxQueuedTimes+9)
	if at, ok := q.lookup(last, true); !ok || !at.Equal(base.Add(time.Duration(maxQueuedTimes+9)*time.Second)) {
		t.Fatalf("newest entry = %v, %t", at, ok)
	}
	if _, ok := q.lookup(last, false); ok {
		t.Error("an entry looked up to be forgotten is still there")
	}
}
