package leader

import (
	"context"
	"time"
)

// Runtime is the time and concurrency the leader (and the scale-set
// listener, which runs under it) keeps. Production uses the machine's
// clock and goroutines (RealRuntime); the fault simulation runs both on
// its virtual clock and scheduler, where a raw timer would never fire and
// a raw goroutine would run outside the scheduler's turns.
type Runtime interface {
	Now() time.Time
	// Sleep waits d or until ctx is done, reporting whether d passed. A
	// runtime may wake a little after ctx is done rather than at once:
	// every caller checks again on waking.
	Sleep(ctx context.Context, d time.Duration) bool
	// Go runs fn with ctx concurrently with its caller.
	Go(ctx context.Context, fn func(ctx context.Context))
}

// RealRuntime is the machine's clock and goroutines.
type RealRuntime struct{}

// Now is time.Now.
func (RealRuntime) Now() time.Time { return time.Now() }

// Sleep waits on a timer, or until ctx is done.
func (RealRuntime) Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Go starts a goroutine.
func (RealRuntime) Go(ctx context.Context, fn func(ctx context.Context)) { go fn(ctx) }
