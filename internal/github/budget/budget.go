package budget

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/github"
)

// Options configure New.
type Options struct {
	// Name says whose budget this is in errors ("installation 777").
	Name   string
	Limits Limits
	// Meter keeps the state; default a new Memory.
	Meter Meter
	// Now and Sleep are the clock (default time.Now and a timer). A test
	// clock whose Sleep moves its time makes every wait instant.
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
}

// Budget paces one credential's requests. It is safe for concurrent use.
type Budget struct {
	name   string
	limits Limits
	meter  Meter
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
	// slots caps this process's requests in flight: a call holds one from
	// Wait until its release. They stay here even when the State is
	// shared: a slot kept in a shared record would be given back by the
	// process that took it, and a Lambda invocation that times out or
	// crashes between Wait and release never gives it back — every such
	// death would shrink the credential's concurrency for good. Per
	// process, a death frees its slots with it; GitHub's 100 is shared
	// by processes each capped at MaxInFlight (10).
	slots chan struct{}

	mu    sync.Mutex
	stats Stats
}

// Stats count what the budget did since it was made.
type Stats struct {
	// Waits are the calls that waited (for points or a slot in flight)
	// before going, and WaitSeconds their total wait.
	Waits       int64
	WaitSeconds float64
	// Paced are the calls refused here with a paced *github.RateLimitError:
	// their turn was further than MaxWait (or the caller's deadline), or
	// the primary budget read 0.
	Paced int64
	// Turns are the paced calls given a turn (github.Turn) by a caller
	// that keeps them, and TurnsTaken the calls that went in one.
	Turns      int64
	TurnsTaken int64
	// TurnsVoid are turns a budget state gone since had given (a process
	// restarted): those calls queued again.
	TurnsVoid int64
	// TurnsLate are turns whose call came later than LateGrace after its
	// time (the queue held its message through an outage, a worker was
	// busy): those calls queued again, as any call.
	TurnsLate int64
	// Held are the calls refused here while a penalty GitHub imposed
	// lasted.
	Held int64
	// Refusals are GitHub's refusals (403/429 rate limits) reported with
	// Refuse.
	Refusals int64
}

// New makes a budget.
func New(opts Options) (*Budget, error) {
	l := opts.Limits.WithDefaults()
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("github budget %s: %w", opts.Name, err)
	}
	b := &Budget{name: opts.Name, limits: l, meter: opts.Meter, now: opts.Now, sleep: opts.Sleep, slots: make(chan struct{}, l.MaxInFlight)}
	if b.now == nil {
		b.now = time.Now
	}
	if b.meter == nil {
		// A process's own budget starts empty: the process does not know
		// what was spent with the credential in the last minute — by the
		// process it replaces, restarted after a crash — and a full bucket
		// on top of that could go past GitHub's limit by a burst at each
		// restart. Empty, a restart adds nothing; the first calls wait a
		// moment (a JIT config, 0.4 s at the default). A shared meter
		// keeps what every process spent.
		now := b.now()
		b.meter = &Memory{state: State{At: now, Epoch: uint64(now.UnixNano())}}
	}
	if b.sleep == nil {
		b.sleep = sleep
	}
	return b, nil
}

// Limits are the budget's limits, defaults filled in.
func (b *Budget) Limits() Limits { return b.limits }

// Stats returns a snapshot of the counters.
func (b *Budget) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// ReadyAt says when a call costing cost points could go, taking nothing:
// now, a later time while the bucket refills, the primary reset while the
// primary budget reads 0, or the end of a penalty. It does not know about
// slots in flight, which free within a request's time.
func (b *Budget) ReadyAt(ctx context.Context, cost int) (time.Time, error) {
	now := b.now()
	var at time.Time
	err := b.meter.Update(ctx, func(stored *State) {
		// On a copy: asking changes nothing, so a shared meter writes
		// nothing.
		s := *stored
		at = s.readyAt(b.limits, now, cost)
		if s.primaryKnown(now) && s.Remaining <= 0 {
			at = later(at, s.Reset)
		}
		at = later(at, s.PenaltyUntil)
	})
	return at, err
}

// Wait takes cost points and a slot in flight, waiting for them, and
// returns the function that gives the slot back when the request is done.
// It does not wait but returns a *github.RateLimitError when the call
// must not go: Paced when its turn is further than MaxWait or than ctx's
// deadline, or the primary budget reads 0; not Paced while a penalty
// GitHub imposed lasts. A cancelled ctx ends the wait with ctx's error.
//
// A caller that keeps turns (github.WithTurns) is not refused for points
// further than MaxWait, up to TurnHorizon: its points are taken now, and
// the paced error carries the turn it was given; the call made again in
// that turn (github.WithTurn) goes then, before every call that asked
// after it.
func (b *Budget) Wait(ctx context.Context, cost int) (release func(), err error) {
	start := b.now()
	if t := github.TakeTurn(ctx, b.name, cost); t != nil {
		release, void, err := b.waitTurn(ctx, start, t)
		if !void {
			return release, err
		}
		// Given by a budget state gone since, or come later than
		// LateGrace after it: queue again, as any call.
	}
	at, seq, err := b.reserve(ctx, start, cost)
	if err != nil {
		return nil, err
	}
	if err := b.sleepUntil(ctx, at); err != nil {
		b.refund(cost, seq)
		return nil, err
	}
	if err := b.acquire(ctx); err != nil {
		b.refund(cost, seq)
		return nil, err
	}
	if waited := b.now().Sub(start); waited > 0 {
		b.count(func(s *Stats) { s.Waits++; s.WaitSeconds += waited.Seconds() })
	}
	return b.releaser(), nil
}

// WaitPatiently is Wait for a request every call of a credential needs
// first — an installation's token — which must not be given a turn: a
// turn would hold the call that needed the token to this budget's pace,
// and each call waiting for the one token would be promised its points
// again. It waits for its points past MaxWait while they come within
// patience; a penalty, a spent primary budget or points further off
// return Wait's error.
func (b *Budget) WaitPatiently(ctx context.Context, cost int, patience time.Duration) (release func(), err error) {
	ctx = github.WithoutTurns(ctx)
	deadline := b.now().Add(patience)
	for {
		release, err := b.Wait(ctx, cost)
		var paced *github.RateLimitError
		if !errors.As(err, &paced) || !paced.Paced || paced.RetryAt.After(deadline) {
			return release, err
		}
		if err := b.sleepUntil(ctx, paced.RetryAt); err != nil {
			return nil, err
		}
	}
}

// reserve takes the points, or says why the call may not go.
func (b *Budget) reserve(ctx context.Context, now time.Time, cost int) (time.Time, uint64, error) {
	latest := now.Add(b.limits.MaxWait)
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < b.limits.MaxWait {
		latest = now.Add(time.Until(dl))
	}
	keepsTurns := github.KeepsTurns(ctx)
	var at time.Time
	var seq uint64
	var refused *github.RateLimitError
	err := b.meter.Update(ctx, func(s *State) {
		var turnable bool
		at, seq = time.Time{}, 0
		refused, turnable = b.check(s, now, cost, latest)
		switch {
		case refused == nil:
			at, seq = s.take(b.limits, now, cost)
		case turnable && keepsTurns:
			turnAt, _ := s.take(b.limits, now, cost)
			refused.RetryAt, refused.Turn = turnAt, &github.Turn{Budget: b.name, At: turnAt, Cost: cost, Epoch: s.Epoch}
		}
	})
	if errors.Is(err, ErrMeterContended) {
		// Too many processes took points at once: the call waits a moment,
		// as for any budget, rather than failing.
		b.count(func(s *Stats) { s.Paced++ })
		return time.Time{}, 0, &github.RateLimitError{Paced: true, RetryAt: now.Add(ContendedWait), Message: err.Error()}
	}
	if err != nil {
		return time.Time{}, 0, fmt.Errorf("github budget %s: %w", b.name, err)
	}
	if refused != nil {
		b.count(func(s *Stats) {
			switch {
			case refused.Turn != nil:
				s.Paced++
				s.Turns++
			case refused.Paced:
				s.Paced++
			default:
				s.Held++
			}
		})
		return time.Time{}, 0, refused
	}
	return at, seq, nil
}

// TurnHorizon is how far ahead a turn may be given: a create keeps its
// turn in a queue message's delay, and SQS delays a message at most 15
// minutes in one hop. A call whose turn would be further is refused, to
// come back when it would be within it. At 810 points a minute, 14
// minutes are about 2,270 JIT runners queued in order.
const TurnHorizon = 14 * time.Minute

// check refuses a call that may not go by latest; turnable says the
// refusal is only for points further than latest and within TurnHorizon,
// so the call may be given a turn instead.
func (b *Budget) check(s *State, now time.Time, cost int, latest time.Time) (refused *github.RateLimitError, turnable bool) {
	if now.Before(s.PenaltyUntil) {
		return b.penalty(s), false
	}
	if s.primaryKnown(now) && s.Remaining <= 0 {
		return &github.RateLimitError{RetryAt: s.Reset, Paced: true,
			Message: b.name + ": the primary rate limit has no calls left until it resets"}, false
	}
	at := s.readyAt(b.limits, now, cost)
	if !at.After(latest) {
		return nil, false
	}
	if beyond := at.Sub(now) - TurnHorizon; beyond > 0 {
		// Come back when a turn would be within the horizon.
		return &github.RateLimitError{RetryAt: now.Add(beyond), Paced: true,
			Message: fmt.Sprintf("%s: %d points per minute are spoken for further than %s ahead", b.name, b.limits.PointsPerMinute, TurnHorizon)}, false
	}
	return &github.RateLimitError{RetryAt: at, Paced: true,
		Message: fmt.Sprintf("%s: %d points per minute are spoken for until then", b.name, b.limits.PointsPerMinute)}, true
}

// penalty is the refusal of a call while a penalty GitHub imposed lasts.
func (b *Budget) penalty(s *State) *github.RateLimitError {
	return &github.RateLimitError{RetryAt: s.PenaltyUntil, Secondary: s.PenaltySecondary,
		Message: fmt.Sprintf("%s: not calling GitHub until the rate limit it reported lifts (%s)", b.name, s.PenaltyMessage)}
}

// waitTurn lets a call go in the turn it was given: its points were taken
// with the turn, so it takes none now; it waits for the turn's time (at
// most MaxWait: a turn delivered early is handed back, kept) and a slot.
// A penalty GitHub imposed since holds it, and the turn is lost: the
// points it promised went unspent, which only slows the pace. A turn of
// another state (void: the process that gave it is gone) is not honoured.
func (b *Budget) waitTurn(ctx context.Context, start time.Time, t *github.Turn) (release func(), void bool, err error) {
	var held *github.RateLimitError
	err = b.meter.Update(ctx, func(s *State) {
		held, void = nil, s.Epoch != t.Epoch
		if start.Before(s.PenaltyUntil) {
			held = b.penalty(s)
		}
	})
	if err != nil && !errors.Is(err, ErrMeterContended) {
		return nil, false, fmt.Errorf("github budget %s: %w", b.name, err)
	}
	if void {
		b.count(func(s *Stats) { s.TurnsVoid++ })
		return nil, true, nil
	}
	if held != nil {
		b.count(func(s *Stats) { s.Held++ })
		return nil, false, held
	}
	if start.Sub(t.At) > b.limits.LateGrace() {
		// The bucket counted these points at the turn's time, and that
		// time went unused. Sent now as well, they would come on top of
		// the points counted since: turns held by a store outage and
		// delivered together at its end went to GitHub in one burst past
		// its limit (a simulation seed). So a late turn is queued again,
		// as any call; its first points are not given back, which only
		// slows the pace.
		b.count(func(s *Stats) { s.TurnsLate++ })
		return nil, true, nil
	}
	if t.At.Sub(start) > b.limits.MaxWait {
		early := *t
		b.count(func(s *Stats) { s.Paced++ })
		return nil, false, &github.RateLimitError{RetryAt: t.At, Paced: true, Turn: &early,
			Message: fmt.Sprintf("%s: the call's turn is at %s", b.name, t.At.UTC().Format(time.RFC3339))}
	}
	if err := b.sleepUntil(ctx, t.At); err != nil {
		return nil, false, err
	}
	if err := b.acquire(ctx); err != nil {
		return nil, false, err
	}
	b.count(func(s *Stats) {
		s.TurnsTaken++
		if waited := b.now().Sub(start); waited > 0 {
			s.Waits++
			s.WaitSeconds += waited.Seconds()
		}
	})
	return b.releaser(), false, nil
}

// releaser gives back the slot a call holds, once however often called.
func (b *Budget) releaser() func() {
	var once sync.Once
	return func() { once.Do(func() { <-b.slots }) }
}

func (b *Budget) refund(cost int, seq uint64) {
	now := b.now()
	// Best effort: a refund the meter cannot record only slows the pace.
	_ = b.meter.Update(context.Background(), func(s *State) { s.refund(b.limits, now, cost, seq) })
}

func (b *Budget) sleepUntil(ctx context.Context, at time.Time) error {
	if d := at.Sub(b.now()); d > 0 {
		return b.sleep(ctx, d)
	}
	return ctx.Err()
}

func (b *Budget) acquire(ctx context.Context) error {
	select {
	case b.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *Budget) count(f func(*Stats)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(&b.stats)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
