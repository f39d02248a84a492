package sim

import (
	"sync"
	"time"
)

// Epoch is where every bolt run's virtual clock starts, so a seed replays
// with the same timestamps. It is a Monday at midnight UTC.
var Epoch = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// Clock is the simulation's virtual time. Only the simulation moves it,
// between steps; the engine (Options.Now), the store and the queue read it.
// It is safe for concurrent reads: the DynamoDB run's SDK goroutines may
// read it while the scheduler holds it still.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock stopped at start.
func NewClock(start time.Time) *Clock {
	return &Clock{now: start}
}

// Now is the current virtual time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// advanceTo moves the clock forward to t; it never moves back.
func (c *Clock) advanceTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.After(c.now) {
		c.now = t
	}
}
