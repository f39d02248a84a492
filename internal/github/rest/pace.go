package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/budget"
)

// pacer sits under authentication, above the observer: every request that
// would reach GitHub — API calls and the token mints ghinstallation makes
// under them — first waits for its credential's budget, and every answer
// tells the budget what GitHub said (the primary budget left, or a
// refusal). A request the budget refuses never reaches the network, so the
// observer does not count it.
type pacer struct {
	next http.RoundTripper
	// calls is the budget of the credential the API calls carry (an
	// installation's token, or the personal access token).
	calls *budget.Budget
	// mints is the App's budget: POST /app/installations/{id}/access_tokens
	// is authenticated by the App's JWT, and GitHub charges a request to
	// the identity that authenticates it — the App, shared by all its
	// installations — not to the installation the token is for. Nil with a
	// personal access token.
	mints *budget.Budget
	// minted is set once GitHub issued the installation a token (nil
	// with a personal access token or the App's own client): until then
	// a call first spends the App's budget on the token request, which
	// ReadyAt must count.
	minted *atomic.Bool
	now    func() time.Time
}

// tokenPatience is how long a token request waits for the App's budget
// (budget.WaitPatiently): one a token's lifetime per installation, so
// waiting costs little, and refusing it would fail the call that needed
// it, or give it a turn that holds that call to the App's budget.
const tokenPatience = time.Minute

func (p *pacer) RoundTrip(req *http.Request) (*http.Response, error) {
	b, wait := p.calls, p.calls.Wait
	if p.mints != nil && isTokenRequest(req) {
		b = p.mints
		wait = func(ctx context.Context, cost int) (func(), error) {
			return b.WaitPatiently(ctx, cost, tokenPatience)
		}
	}
	release, err := wait(req.Context(), budget.Cost(req.Method))
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close() // a RoundTripper closes the body, even unsent
		}
		return nil, err
	}
	resp, err := p.next.RoundTrip(req)
	// The slot is given back with the answer's headers, not after its body:
	// GitHub has done the work by then, and a caller that never closes a
	// body (ghinstallation, on a refused mint) must not keep a slot.
	release()
	if err != nil {
		return nil, err
	}
	if r, refused := refusalOf(resp, p.now()); refused {
		b.Refuse(req.Context(), r)
		return resp, nil
	}
	rate, ok := parseRateHeaders(resp.Header)
	b.Answered(req.Context(), rate.Remaining, rate.Reset, ok)
	if b == p.mints && p.minted != nil && resp.StatusCode == http.StatusCreated {
		p.minted.Store(true)
	}
	return resp, nil
}

// refusalOf reads a 403 or 429 that is a rate limit. A 403 is ambiguous
// (a missing permission, too): its body's message and documentation URL
// decide, so the body is read here and put back for the caller.
func refusalOf(resp *http.Response, now time.Time) (budget.Refusal, bool) {
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests {
		return budget.Refusal{}, false
	}
	var body struct {
		Message          string `json:"message"`
		DocumentationURL string `json:"documentation_url"`
	}
	if resp.Body != nil {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		_ = json.Unmarshal(raw, &body)
	}
	return refusal(resp.StatusCode, resp.Header, body.Message+" "+body.DocumentationURL, now)
}

// refusal classifies a 403/429 by its headers and message: remaining 0 is
// the primary limit; a retry-after, a 429, or a message naming a secondary
// limit is a secondary limit; any other 403 is not a rate limit.
func refusal(status int, h http.Header, message string, now time.Time) (budget.Refusal, bool) {
	if status != http.StatusForbidden && status != http.StatusTooManyRequests {
		return budget.Refusal{}, false
	}
	retryAfter, hasRetryAfter := github.ParseRetryAfter(h.Get("Retry-After"), now)
	r := budget.Refusal{RetryAfter: retryAfter, Message: strings.TrimSpace(message)}
	if h.Get("X-RateLimit-Remaining") == "0" {
		if rate, ok := parseRateHeaders(h); ok {
			r.Reset = rate.Reset
		}
		return r, true
	}
	lower := strings.ToLower(message)
	r.Secondary = hasRetryAfter || status == http.StatusTooManyRequests ||
		strings.Contains(lower, "secondary rate limit") || strings.Contains(lower, "secondary-rate-limits")
	return r, r.Secondary
}
