package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
)

// waitsForGitHub reports whether a JIT registration did not happen because
// of GitHub's API budget — runfleet's pacing held the call (nothing was
// sent), or GitHub's rate limit refused it (nothing was made) — and until
// when, with the turn the budget gave it. Such a create waits; it has not
// failed.
func waitsForGitHub(err error) (*github.RateLimitError, bool) {
	var rl *github.RateLimitError
	if !errors.As(err, &rl) {
		return nil, false
	}
	return rl, true
}

// createWaits puts a create that waits for GitHub's budget back to
// pending_create, due when the budget allows it: the attempt it claimed is
// given back (nothing was made with it, so no instance token names it),
// no fault is recorded and no replacement follows. The instance shows
// when it goes (WaitingForGitHub). Oldest jobs go first: the create's
// message keeps the turn the budget gave it (github.Turn), and is due
// then.
func (e *Engine) createWaits(ctx context.Context, log *slog.Logger, claimed *runner.Instance, wait *github.RateLimitError, cause error) error {
	until := wait.RetryAt
	if wait.Turn == nil {
		// A refusal that named no time still waits a moment: never a spin.
		until = maxTime(until, e.now().Add(e.backoff(1)))
	}
	next, won, err := e.mutateFrom(ctx, claimed.Name, claimed, func(cur *runner.Instance) (*runner.Instance, error) {
		if cur.Status != runner.StatusCreating || cur.CreateAttempt != claimed.CreateAttempt {
			return nil, errNoChange
		}
		next, err := cur.Transition(runner.StatusPendingCreate, e.now())
		if err != nil {
			return nil, err
		}
		next.CreateAttempt--
		next.NextAttemptAt, next.WaitingForGitHub = until, until
		return next, nil
	})
	if err != nil {
		return fmt.Errorf("record %s waiting for GitHub's budget: %w", claimed.Name, err)
	}
	if !won {
		return nil
	}
	delay := until.Sub(e.now())
	log.Info("create waits for GitHub's API budget; no attempt used", "goes_in", delay.String(), "in_turn", wait.Turn != nil, "reason", cause.Error())
	msg := createMessage(next, EventMeta{})
	msg.Turn = wait.Turn
	return e.send(ctx, msg, delay)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
