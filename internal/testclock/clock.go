// Package testclock is runfleet's one fake clock, for tests and for the
// simulation's virtual time. It imports nothing of runfleet, so any
// package's tests can use it without an import cycle and without linking
// the engine.
package testclock

import (
	"context"
	"sync"
	"time"
)

// Clock is a time source a test moves by hand. The zero value runs: it
// reads real time plus how far it was moved, so a test passes a timeout
// without waiting for it. At makes a stopped clock, which reads exactly
// where it was set plus how far it was moved, so times are compared
// exactly and never measured. Safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	// stopped: the clock stands at at; otherwise it runs with real time.
	stopped bool
	at      time.Time
	// offset is how far a running clock was moved.
	offset time.Duration
}

// At returns a clock stopped at t: it moves only when told to. With
// ShiftEnv set it stops at t's weekday and time of day in another week
// (see Shift): a test reads its dates from the clock, never from the date
// it passed here.
func At(t time.Time) *Clock {
	return &Clock{stopped: true, at: moved(t, time.Now(), Shift())}
}

// AtRealNow returns a clock stopped at the real clock's now, which
// ShiftEnv does not move: for a test in which a party that takes no clock
// (go-github's App transport signs its JWTs with time.Now) talks to code
// on this one. Everything else uses At.
func AtRealNow() *Clock { return &Clock{stopped: true, at: time.Now()} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped {
		return time.Now().Add(c.offset)
	}
	return c.at
}

// Advance moves the clock by d: forward, or back for a negative d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped {
		c.offset += d
		return
	}
	c.at = c.at.Add(d)
}

// AdvanceTo moves the clock forward to t; it never moves back.
func (c *Clock) AdvanceTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopped {
		if d := time.Until(t) - c.offset; d > 0 {
			c.offset += d
		}
		return
	}
	if t.After(c.at) {
		c.at = t
	}
}

// Sleep moves the clock forward by d instead of waiting, so code that
// waits on this clock (a GitHub budget's pacing) goes at once, at the time
// it would have gone. Concurrent sleepers each move it: time then runs
// faster than any one of them asked, never slower.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Advance(d)
	return nil
}
