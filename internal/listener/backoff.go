package listener

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/runfleet/runfleet/internal/github"
)

// backoff doubles from min to max, with jitter so that the listeners of
// many pools do not retry in step.
type backoff struct {
	min, max time.Duration
	cur      time.Duration
	rand     *rand.Rand
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	return b.cur/2 + time.Duration(b.rand.Int64N(int64(b.cur/2)+1))
}

func (b *backoff) reset() { b.cur = 0 }

// retryAt is when a rate-limited call may be made again.
func retryAt(err error) (time.Time, bool) {
	var rl *github.RateLimitError
	if errors.As(err, &rl) && !rl.RetryAt.IsZero() {
		return rl.RetryAt, true
	}
	return time.Time{}, false
}
