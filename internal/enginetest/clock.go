package enginetest

import (
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
