package budget

import (
	"context"
	"time"

	"github.com/runfleet/runfleet/internal/github"
)

// GitHub's advice when a limit gives no time to wait: "wait for at least
// one minute", then longer while it keeps happening.
const (
	MinPenalty          = time.Minute
	MaxSecondaryBackoff = 15 * time.Minute
)

// Refusal is a rate limit GitHub answered (403 or 429), as its headers and
// message describe it.
type Refusal struct {
	// Secondary: a secondary limit; otherwise the primary budget is
	// spent (x-ratelimit-remaining: 0).
	Secondary bool
	// RetryAfter is the retry-after header; 0 when absent.
	RetryAfter time.Duration
	// Reset is x-ratelimit-reset; zero when absent.
	Reset   time.Time
	Message string
}

// Refuse records a refusal and returns the error for the call: nothing
// goes to GitHub until its RetryAt: with the primary budget spent, its
// reset (or retry-after, if later); for a secondary limit, retry-after;
// with neither, a minute, doubling with each secondary limit in a row (up
// to MaxSecondaryBackoff), as GitHub asks. A
// refusal during a penalty extends it, never shortens it.
func (b *Budget) Refuse(ctx context.Context, r Refusal) *github.RateLimitError {
	now := b.now()
	b.count(func(s *Stats) { s.Refusals++ })
	rl := &github.RateLimitError{Secondary: r.Secondary, Message: r.Message}
	// A meter that cannot record the penalty still gets the error back;
	// the next refusal GitHub answers records it again.
	_ = b.meter.Update(ctx, func(s *State) {
		rl.RetryAt = retryAt(s, now, r)
		if rl.RetryAt.After(s.PenaltyUntil) {
			s.PenaltyUntil, s.PenaltySecondary, s.PenaltyMessage = rl.RetryAt, r.Secondary, r.Message
		}
		if !r.Secondary {
			s.Remaining, s.Reset = 0, rl.RetryAt
		}
	})
	return rl
}

// retryAt is when a refused call may be retried; it counts the strike of
// a secondary limit that named no wait.
func retryAt(s *State, now time.Time, r Refusal) time.Time {
	if !r.Secondary {
		at := r.Reset
		if r.RetryAfter > 0 {
			at = later(at, now.Add(r.RetryAfter))
		}
		if at.IsZero() {
			at = now.Add(MinPenalty)
		}
		return at
	}
	if r.RetryAfter > 0 {
		return now.Add(r.RetryAfter)
	}
	s.Strikes++
	d := MinPenalty
	for i := 1; i < s.Strikes && d < MaxSecondaryBackoff; i++ {
		d *= 2
	}
	return now.Add(min(d, MaxSecondaryBackoff))
}

// Answered records an answer that was not a refusal: it ends a run of
// secondary limits, and its x-ratelimit-remaining/-reset (when known, ok)
// update the primary budget.
func (b *Budget) Answered(ctx context.Context, remaining int, reset time.Time, ok bool) {
	now := b.now()
	_ = b.meter.Update(ctx, func(s *State) {
		s.Strikes = 0
		if ok {
			s.observe(now, remaining, reset)
		}
	})
}

// Penalty is the refusal whose wait still lasts, or nil.
func (b *Budget) Penalty(ctx context.Context) *github.RateLimitError {
	now := b.now()
	var rl *github.RateLimitError
	_ = b.meter.Update(ctx, func(s *State) {
		rl = nil
		if now.Before(s.PenaltyUntil) {
			rl = &github.RateLimitError{RetryAt: s.PenaltyUntil, Secondary: s.PenaltySecondary, Message: s.PenaltyMessage}
		}
	})
	return rl
}
