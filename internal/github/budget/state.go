package budget

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"
)

// State is one credential's budget as a plain value, so that it can live
// anywhere a Meter keeps it: in this process (Memory), or as JSON in a
// store record several Lambda invocations share by compare-and-set
// (package storemeter). Slots in flight are not part of it: they stay
// with the process (see Budget).
type State struct {
	// Points is the bucket's level at At. Negative: points already
	// promised to calls that are waiting for their turn.
	Points float64   `json:"points"`
	At     time.Time `json:"at,omitzero"`
	// Seq counts the points taken; a refund is honoured only for the
	// latest taking (see refund).
	Seq uint64 `json:"seq,omitempty"`
	// Epoch names this state (github.Turn's Epoch): set when it is made,
	// from its clock.
	Epoch uint64 `json:"epoch,omitempty"`

	// PenaltyUntil: GitHub refused a call and said to wait until then.
	// Nothing is sent to GitHub before it.
	PenaltyUntil     time.Time `json:"penalty_until,omitzero"`
	PenaltySecondary bool      `json:"penalty_secondary,omitempty"`
	PenaltyMessage   string    `json:"penalty_message,omitempty"`
	// Strikes counts secondary limits in a row that named no wait, for
	// the exponential backoff GitHub asks for.
	Strikes int `json:"strikes,omitempty"`

	// Remaining is the primary budget left until Reset, as GitHub last
	// reported it less the calls sent since. Meaningful while Reset is in
	// the future.
	Remaining int       `json:"remaining,omitempty"`
	Reset     time.Time `json:"reset,omitzero"`
}

// Meter keeps a budget's State. Update applies fn to it as one atomic step.
// fn may run more than once — a shared meter retries it when another
// process changed the state first — so fn must depend only on its
// argument and on values computed before Update was called. A shared
// meter writes only when fn changed the state: an fn that only reads
// should leave it as it was.
type Meter interface {
	Update(ctx context.Context, fn func(*State)) error
}

// Memory is a Meter for one process.
type Memory struct {
	mu    sync.Mutex
	state State
}

// Update applies fn under a lock.
func (m *Memory) Update(_ context.Context, fn func(*State)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	fn(&m.state)
	return nil
}

// advance refills the bucket up to now. A zero state starts full: a
// shared record never written (a process-local budget starts empty
// instead: see New).
func (s *State) advance(l Limits, now time.Time) {
	if s.At.IsZero() {
		s.Points, s.At, s.Epoch = float64(l.Burst), now, uint64(now.UnixNano())
		return
	}
	if now.After(s.At) {
		s.Points = math.Min(float64(l.Burst), s.Points+l.refill()*now.Sub(s.At).Seconds())
		s.At = now
	}
}

// readyAt is when cost points will be in the bucket, given the promises
// already made: now, or later by the deficit over the refill rate (rounded
// up, so a call never goes a nanosecond early).
func (s *State) readyAt(l Limits, now time.Time, cost int) time.Time {
	s.advance(l, now)
	deficit := float64(cost) - s.Points
	if deficit <= 0 {
		return now
	}
	return now.Add(time.Duration(math.Ceil(deficit / l.refill() * float64(time.Second))))
}

// take promises cost points to a call that goes at the returned time.
func (s *State) take(l Limits, now time.Time, cost int) (time.Time, uint64) {
	at := s.readyAt(l, now, cost)
	s.Points -= float64(cost)
	s.Seq++
	if s.primaryKnown(now) {
		s.Remaining--
	}
	return at, s.Seq
}

// refund gives back the points of a call that did not go — only when no
// other call took points after it. A later call's turn was computed with
// these points spent; giving them back to a third call would let it go
// alongside that later one, a burst beyond the bucket. Not refunding only
// makes the pace slower, never faster.
func (s *State) refund(l Limits, now time.Time, cost int, seq uint64) {
	if seq != s.Seq {
		return
	}
	s.advance(l, now)
	s.Points = math.Min(float64(l.Burst), s.Points+float64(cost))
	if s.primaryKnown(now) {
		s.Remaining++
	}
}

func (s *State) primaryKnown(now time.Time) bool {
	return !s.Reset.IsZero() && now.Before(s.Reset)
}

// observe records the primary budget an answer reported. Answers overtake
// one another, so within one window the lower count wins; a later window
// replaces it; an earlier one is stale.
func (s *State) observe(now time.Time, remaining int, reset time.Time) {
	switch {
	case reset.Equal(s.Reset):
		s.Remaining = min(s.Remaining, remaining)
	case reset.After(s.Reset) || !s.primaryKnown(now):
		s.Remaining, s.Reset = remaining, reset
	}
}

// ErrMeterContended is what a shared Meter's Update returns (wrapped) when
// it lost too many races to other processes taking points at once: the
// call waits ContendedWait, as a paced call does; it has not failed.
var ErrMeterContended = errors.New("github budget: too many processes taking points at once")

// ContendedWait is how long a call waits after its shared budget was too
// contended to take points.
const ContendedWait = time.Second
