package github

import (
	"context"
	"sync/atomic"
	"time"
)

// Turn is a call's place in its credential's budget: the budget promised
// the call's points for At, ahead of every call that asked after it. A
// caller that keeps the turn and makes the call again at At, in the turn
// (WithTurn), goes before anyone who asked later — which is how creates
// held back by GitHub's rate limit go oldest first. A turn is spent once
// under a context; the caller keeps each turn with one call (a create
// keeps it on its instance's queue message, and the claim's
// compare-and-set lets one worker make the call). A turn never used only
// slows the pace, never quickens it.
type Turn struct {
	// Budget names the budget that promised it ("installation:42").
	Budget string `json:"budget"`
	// At is when the call may go.
	At time.Time `json:"at"`
	// Cost is the points promised: the turn is for a call of that cost.
	Cost int `json:"cost"`
	// Epoch names the budget state that promised it: a process's own
	// budget is new at each start, and a turn the process before it gave
	// was promised from a bucket that is gone — honoured by the new one,
	// it would go unpaid, past the limit. Such a turn is void.
	Epoch uint64 `json:"epoch,omitempty"`
}

type turnKey struct{}

// turns is what a context says about turns: whether its caller keeps
// them, and the one its next call of the turn's cost goes in.
type turns struct {
	turn *Turn
	used atomic.Bool
}

// WithTurns says the caller keeps turns: a call its budget would hold
// back past the budget's longest wait is given a turn (RateLimitError's
// Turn) instead of only a time to come back.
func WithTurns(ctx context.Context) context.Context {
	return context.WithValue(ctx, turnKey{}, &turns{})
}

// WithTurn makes the first call under ctx that the turn fits — its budget
// and cost — go in it; the caller keeps turns.
func WithTurn(ctx context.Context, t *Turn) context.Context {
	return context.WithValue(ctx, turnKey{}, &turns{turn: t})
}

// WithoutTurns hides the caller's turns from calls made under ctx: they
// are neither given a turn nor go in one.
func WithoutTurns(ctx context.Context) context.Context {
	return context.WithValue(ctx, turnKey{}, nil)
}

// KeepsTurns reports whether the caller under ctx keeps turns.
func KeepsTurns(ctx context.Context) bool {
	_, ok := ctx.Value(turnKey{}).(*turns)
	return ok
}

// TurnOf returns the turn under ctx not taken yet, without taking it (nil
// when there is none): a layer above several budgets routes the call to
// the one that gave it.
func TurnOf(ctx context.Context) *Turn {
	ts, ok := ctx.Value(turnKey{}).(*turns)
	if !ok || ts.turn == nil || ts.used.Load() {
		return nil
	}
	return ts.turn
}

// TakeTurn returns the turn under ctx for a call costing cost on the
// named budget, once; nil when there is none, it is for another budget or
// cost, or it was taken already.
func TakeTurn(ctx context.Context, budget string, cost int) *Turn {
	ts, ok := ctx.Value(turnKey{}).(*turns)
	if !ok || ts.turn == nil || ts.turn.Budget != budget || ts.turn.Cost != cost {
		return nil
	}
	if !ts.used.CompareAndSwap(false, true) {
		return nil
	}
	return ts.turn
}
