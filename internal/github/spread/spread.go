// Package spread is the GitHub port over several GitHub Apps installed on
// the same owners. GitHub counts its secondary limit per App installation
// (900 points a minute), so N Apps give N budgets: each call goes through
// the App whose budget lets it go soonest, and an App GitHub refuses (a
// rate limit it imposed, a suspension) or that is not installed on the
// owner hands the call to the next. The first App is the one whose
// webhooks runfleet receives: the installation a job event names is its
// own, and the others find theirs for the owner.
package spread

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/runfleet/runfleet/internal/github"
)

// App is one App's client: the GitHub port, and what its budgets say.
type App interface {
	github.GitHub
	// ReadyAt says when a call of method for owner could go on this App.
	ReadyAt(ctx context.Context, owner github.Owner, method string) (time.Time, error)
	// HasBudget reports whether the App keeps the budget a turn names.
	HasBudget(name string) bool
}

// GitHub spreads calls over Apps. It is safe for concurrent use.
type GitHub struct {
	apps []App
	log  *slog.Logger
}

var _ github.GitHub = (*GitHub)(nil)

// New spreads calls over apps; apps[0] is the App whose webhooks runfleet
// receives.
func New(apps []App, log *slog.Logger) (*GitHub, error) {
	if len(apps) == 0 {
		return nil, errors.New("spread: no App")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &GitHub{apps: apps, log: log}, nil
}

// order lists the Apps a call of method for owner tries, first the one
// that can make it soonest: the App whose budget gave the call's turn, if
// it has one; else by when each budget lets the call go (an App that
// cannot say — not installed on the owner — last).
func (g *GitHub) order(ctx context.Context, owner github.Owner, method string) []int {
	idx := make([]int, len(g.apps))
	for i := range idx {
		idx[i] = i
	}
	if len(g.apps) == 1 {
		return idx
	}
	if t := github.TurnOf(ctx); t != nil {
		for i, a := range g.apps {
			if a.HasBudget(t.Budget) {
				idx[0], idx[i] = i, 0
				return idx
			}
		}
	}
	ready := make([]time.Time, len(g.apps))
	for i, a := range g.apps {
		at, err := a.ReadyAt(ctx, ownerFor(i, owner), method)
		if err != nil {
			at = time.Unix(1<<40, 0) // after every real time
		}
		ready[i] = at
	}
	sort.SliceStable(idx, func(x, y int) bool { return ready[idx[x]].Before(ready[idx[y]]) })
	return idx
}

// ownerFor is owner as App i names it: the first App keeps the
// installation a job event named; the others find their own.
func ownerFor(i int, owner github.Owner) github.Owner {
	if i > 0 {
		owner.InstallationID = 0
	}
	return owner
}

// elsewhere reports whether another App may make a call this one could
// not, without the call having taken effect: it is not installed on the
// owner or lacks a permission (misconfigured), or GitHub refused it for a
// rate limit it imposed. runfleet's own pacing (Paced) is not a reason:
// the Apps were tried in the order of their budgets, and a paced call
// keeps the turn its App gave it. Any other failure may have taken effect
// (a 5xx after the write) and is returned.
func elsewhere(err error) bool {
	var rl *github.RateLimitError
	if errors.As(err, &rl) {
		return !rl.Paced
	}
	return errors.Is(err, github.ErrMisconfigured)
}

// call runs do on the Apps in order until one makes the call, or one
// fails in a way another App cannot mend.
func call[T any](ctx context.Context, g *GitHub, op string, owner github.Owner, method string, do func(App, github.Owner) (T, error)) (T, error) {
	var errs []error
	for _, i := range g.order(ctx, owner, method) {
		v, err := do(g.apps[i], ownerFor(i, owner))
		if err == nil || !elsewhere(err) {
			return v, err
		}
		g.log.Info("GitHub App could not make the call; trying the next", "op", op, "app", i, "owner", owner.String(), "error", err)
		errs = append(errs, fmt.Errorf("app %d: %w", i, err))
	}
	var zero T
	return zero, errors.Join(errs...)
}
