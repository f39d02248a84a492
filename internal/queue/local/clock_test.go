package local_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/queue/local"
	"github.com/runfleet/runfleet/internal/testclock"
)

// A queue on a clock of its own decides delays and visibility timeouts by
// that clock alone, so a simulation can jump hours without waiting for them.
func TestVirtualClockDecidesDueTimes(t *testing.T) {
	t.Parallel()
	clock := testclock.At(time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC))
	q := openQueue(t, filepath.Join(t.TempDir(), "queue.db"), local.Options{Now: clock.Now})
	if got := q.Now(); !got.Equal(clock.Now()) {
		t.Fatalf("Now() = %v, want the clock's %v", got, clock.Now())
	}
	poll := queue.ReceiveOptions{Max: 1, Visibility: time.Minute}

	mustSend(t, q, "later", time.Hour)
	if msgs := mustReceive(t, q, poll); len(msgs) != 0 {
		t.Fatalf("a message delayed an hour was delivered at once: %q", msgs[0].Body)
	}
	clock.Advance(time.Hour - time.Nanosecond)
	if msgs := mustReceive(t, q, poll); len(msgs) != 0 {
		t.Fatal("a message delayed an hour was delivered a nanosecond early")
	}
	clock.Advance(time.Nanosecond)
	first := mustReceive(t, q, poll)
	if len(first) != 1 || string(first[0].Body) != "later" {
		t.Fatalf("at its due time got %d messages, want the delayed one", len(first))
	}

	clock.Advance(time.Minute - time.Nanosecond)
	if msgs := mustReceive(t, q, poll); len(msgs) != 0 {
		t.Fatal("a received message came back before its visibility timeout")
	}
	clock.Advance(time.Nanosecond)
	again := mustReceive(t, q, poll)
	if len(again) != 1 || again[0].ID != first[0].ID || again[0].ReceiveCount != 2 {
		t.Fatalf("after the visibility timeout got %+v, want the same message received twice", again)
	}
}

// Reopening releases in-flight messages as of the clock's now, not the
// machine's: a virtual clock far from real time still gets them back at once.
func TestVirtualClockReleasesInFlightAtOpen(t *testing.T) {
	t.Parallel()
	clock := testclock.At(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	path := filepath.Join(t.TempDir(), "queue.db")
	q, err := local.Open(path, local.Options{Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	mustSend(t, q, "in flight", 0)
	if got := mustReceive(t, q, queue.ReceiveOptions{Max: 1, Visibility: time.Hour}); len(got) != 1 {
		t.Fatalf("received %d messages, want 1", len(got))
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := openQueue(t, path, local.Options{Now: clock.Now})
	if got := mustReceive(t, reopened, queue.ReceiveOptions{Max: 1}); len(got) != 1 {
		t.Fatal("a message in flight when the queue closed was not visible again at once after reopening")
	}
}
