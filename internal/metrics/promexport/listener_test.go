package promexport_test

import (
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/metrics/promexport"
)

// unix is t as the last-poll gauge holds it.
func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// A listener's series exist only for the pools a listener runs for: the
// counters at 0 and the last-poll clock at the start, moved by every
// answered poll and by taking the lease; a conflict is counted and moves
// no clock.
func TestListenerSeries(t *testing.T) {
	rec := promexport.New([]string{"linux", "webhook"}, promexport.State{})
	pool := map[string]string{"pool": "linux"}
	before := time.Now()
	rec.WatchListeners([]string{"linux"})
	started := gauge(t, rec, metrics.ListenerLastPoll, pool)
	if started < unix(before) || started > unix(time.Now()) {
		t.Fatalf("last poll %v right after the start at %v, want the start", started, unix(before))
	}
	for _, name := range []string{metrics.ListenerPolls, metrics.ListenerSessionConflicts} {
		if got := counter(t, rec, name, "linux"); got != 0 {
			t.Errorf("%s = %v at the start, want 0", name, got)
		}
		if got := counter(t, rec, name, "webhook"); got != -1 {
			t.Errorf("%s{pool=webhook} = %v, want no series: the pool has no listener", name, got)
		}
	}
	if got := gauge(t, rec, metrics.ListenerLastPoll, map[string]string{"pool": "webhook"}); got != -1 {
		t.Errorf("last poll of a pool without a listener = %v, want no series", got)
	}

	time.Sleep(5 * time.Millisecond)
	rec.ListenerSessionConflict("linux")
	rec.ListenerSessionConflict("linux")
	if got := counter(t, rec, metrics.ListenerSessionConflicts, "linux"); got != 2 {
		t.Errorf("conflicts = %v, want 2", got)
	}
	if got := gauge(t, rec, metrics.ListenerLastPoll, pool); got != started {
		t.Errorf("a conflict moved the last poll to %v from %v", got, started)
	}

	polled := time.Now()
	rec.ListenerPolled("linux")
	if got := counter(t, rec, metrics.ListenerPolls, "linux"); got != 1 {
		t.Errorf("polls = %v, want 1", got)
	}
	last := gauge(t, rec, metrics.ListenerLastPoll, pool)
	if last < unix(polled) {
		t.Errorf("last poll %v, want at least the poll's %v", last, unix(polled))
	}

	time.Sleep(5 * time.Millisecond)
	took := time.Now()
	rec.ListenerListening("linux")
	if got := gauge(t, rec, metrics.ListenerLastPoll, pool); got < unix(took) {
		t.Errorf("last poll %v after taking the lease at %v: the clock did not restart", got, unix(took))
	}
}
