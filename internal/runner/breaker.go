package runner

import (
	"slices"
	"time"
)

// SpotBreakerPolicy is a pool's circuit breaker for spot capacity: after
// Interruptions interruptions within Window, the pool's machines are made
// on-demand only for Cooldown. Zero fields take the defaults (2, 15m, 30m).
type SpotBreakerPolicy struct {
	Interruptions int
	Window        time.Duration
	Cooldown      time.Duration
}

// The spot breaker's defaults: two interruptions in fifteen minutes keep
// a pool on on-demand for half an hour.
const (
	DefaultSpotBreakerInterruptions = 2
	DefaultSpotBreakerWindow        = 15 * time.Minute
	DefaultSpotBreakerCooldown      = 30 * time.Minute
)

// WithDefaults returns the policy with zero fields defaulted.
func (p SpotBreakerPolicy) WithDefaults() SpotBreakerPolicy {
	if p.Interruptions <= 0 {
		p.Interruptions = DefaultSpotBreakerInterruptions
	}
	if p.Window <= 0 {
		p.Window = DefaultSpotBreakerWindow
	}
	if p.Cooldown <= 0 {
		p.Cooldown = DefaultSpotBreakerCooldown
	}
	return p
}

// SpotBreaker is a pool's breaker state, one record per pool in the store
// (every worker and Lambda invocation shares it; writes are
// compare-and-set on Version).
type SpotBreaker struct {
	Pool string `json:"pool"`
	// Recent are the interruptions within the policy's window, oldest
	// first, one per instance: a redelivered warning is not counted twice.
	Recent []SpotInterruption `json:"recent,omitempty"`
	// OpenUntil: until then the pool's machines are on-demand only.
	OpenUntil time.Time `json:"open_until,omitzero"`
	// Version increases by one on every write; 0 is a record not stored yet.
	Version   int64     `json:"version"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// SpotInterruption is one counted interruption.
type SpotInterruption struct {
	Instance string    `json:"instance"`
	At       time.Time `json:"at"`
}

// Open reports whether spot is off for the pool at now.
func (b *SpotBreaker) Open(now time.Time) bool {
	return b != nil && now.Before(b.OpenUntil)
}

// Clone returns a deep copy.
func (b *SpotBreaker) Clone() *SpotBreaker {
	if b == nil {
		return nil
	}
	out := *b
	out.Recent = slices.Clone(b.Recent)
	return &out
}

// Record returns the breaker's next version after instance was
// interrupted at `at`, and whether that version trips it (opens a breaker
// that was closed). ok is false when the instance is counted already:
// nothing to write. Interruptions older than the window are forgotten.
func (b *SpotBreaker) Record(p SpotBreakerPolicy, instance string, at, now time.Time) (next *SpotBreaker, tripped, ok bool) {
	p = p.WithDefaults()
	for _, seen := range b.Recent {
		if seen.Instance == instance {
			return nil, false, false
		}
	}
	next = b.Clone()
	next.Recent = slices.DeleteFunc(next.Recent, func(s SpotInterruption) bool { return now.Sub(s.At) >= p.Window })
	next.Recent = append(next.Recent, SpotInterruption{Instance: instance, At: at})
	slices.SortStableFunc(next.Recent, func(a, b SpotInterruption) int { return a.At.Compare(b.At) })
	next.UpdatedAt = now
	if len(next.Recent) >= p.Interruptions && !b.Open(now) {
		next.OpenUntil = now.Add(p.Cooldown)
		tripped = true
	}
	return next, tripped, true
}
