package simulated

import (
	"testing"
	"time"
)

func TestJitterStaysWithinBounds(t *testing.T) {
	p := NewWithOptions(Options{LatencyJitter: 10 * time.Millisecond, Seed: 3})
	distinct := map[time.Duration]bool{}
	for range 1000 {
		pl := p.planLocked(50*time.Millisecond, 0, false, false)
		if pl.delay < 50*time.Millisecond || pl.delay > 60*time.Millisecond {
			t.Fatalf("delay %s outside [50ms, 60ms]", pl.delay)
		}
		distinct[pl.delay] = true
	}
	if len(distinct) < 100 {
		t.Errorf("jitter barely varies: %d distinct delays", len(distinct))
	}
	if pl := NewWithOptions(Options{}).planLocked(5*time.Millisecond, 0, false, false); pl.delay != 5*time.Millisecond {
		t.Errorf("no jitter configured, delay %s", pl.delay)
	}
}
