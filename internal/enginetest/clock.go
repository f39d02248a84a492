package enginetest

import (
	"context"
	"sync/atomic"
	"time"
)

// Clock is real time plus an offset a test moves forward, to pass a timeout
// without waiting for it. The zero value reads real time. Safe for
// concurrent use.
type Clock struct{ offset atomic.Int64 }

// Now is the clock's time.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

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
