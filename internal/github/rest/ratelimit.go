package rest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gogithub "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/budget"
)

// rateLimitOf recognises every shape a rate limit takes, or returns nil:
//   - the budget's own refusal (a penalty lasts, or the call was paced),
//     returned as it is;
//   - go-github's *RateLimitError: a 403 with x-ratelimit-remaining: 0, or
//     go-github refusing locally until the reset it last saw;
//   - go-github's *AbuseRateLimitError: a 403 secondary limit;
//   - a 429 or 403 go-github left as *ErrorResponse (v57 does not classify
//     429), and the same statuses from ghinstallation while minting a
//     token.
//
// The pacer already recorded GitHub's refusal in the budget (b for API
// calls, mints for token mints), which decided how long to wait (the
// backoff of secondary limits in a row lives there): the error says that
// penalty's end; the answer's own times only when no penalty is recorded
// (go-github's local refusal of a window it saw spent).
func rateLimitOf(ctx context.Context, b, mints *budget.Budget, now time.Time, err error) *github.RateLimitError {
	var own *github.RateLimitError
	if errors.As(err, &own) {
		return own
	}
	rl, minting := answeredLimit(now, err)
	if rl == nil {
		return nil
	}
	if minting && mints != nil {
		b = mints
	}
	if b != nil {
		// The penalty is this answer's own (or a longer one's): the pacer
		// recorded it a moment before, and penalties only ever extend.
		if pen := b.Penalty(ctx); pen != nil {
			rl.RetryAt = pen.RetryAt
		}
	}
	return rl
}

// answeredLimit reads a rate limit from GitHub's answer alone; minting
// says it answered a token mint.
func answeredLimit(now time.Time, err error) (rl *github.RateLimitError, minting bool) {
	var primary *gogithub.RateLimitError
	if errors.As(err, &primary) {
		retryAt := primary.Rate.Reset.Time
		if retryAt.IsZero() {
			retryAt = now.Add(budget.MinPenalty)
		}
		return &github.RateLimitError{RetryAt: retryAt, Message: primary.Message}, false
	}
	var abuse *gogithub.AbuseRateLimitError
	if errors.As(err, &abuse) {
		rl := &github.RateLimitError{Secondary: true, Message: abuse.Message, RetryAt: now.Add(budget.MinPenalty)}
		if abuse.RetryAfter != nil && *abuse.RetryAfter > 0 {
			rl.RetryAt = now.Add(*abuse.RetryAfter)
		}
		return rl, false
	}
	var er *gogithub.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return fromResponse(now, er.Response, er.Message), false
	}
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		// ghinstallation's message is its own; GitHub's is in the body
		// (the pacer left it readable).
		return fromResponse(now, he.Response, he.Message+" "+peekBody(he.Response)), true
	}
	return nil, false
}

// fromResponse reads a 403/429 answer's headers.
func fromResponse(now time.Time, resp *http.Response, message string) *github.RateLimitError {
	r, limited := refusal(resp.StatusCode, resp.Header, message, now)
	if !limited {
		return nil // a 403 that is about permissions
	}
	rl := &github.RateLimitError{Secondary: r.Secondary, Message: message, RetryAt: now.Add(budget.MinPenalty)}
	switch {
	case !r.Secondary && !r.Reset.IsZero():
		rl.RetryAt = r.Reset
	case r.RetryAfter > 0:
		rl.RetryAt = now.Add(r.RetryAfter)
	}
	return rl
}

// peekBody reads a small error body and puts it back.
func peekBody(resp *http.Response) string {
	if resp.Body == nil {
		return ""
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	return string(raw)
}
