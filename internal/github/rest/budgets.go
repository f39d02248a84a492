package rest

import (
	"context"
	"maps"
	"net/http"
	"strconv"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/budget"
)

// budgetKeyToken is the personal access token's budget key. Every other
// credential GitHub counts requests against has a key with its id: an
// installation's ("installation:<id>", unique across Apps) and the App's
// own ("app:<id>", for token mints and installation look-ups), so several
// Apps sharing one store keep apart.
const budgetKeyToken = "token"

func installationBudgetKey(id int64) string { return "installation:" + strconv.FormatInt(id, 10) }

func (c *Client) appBudgetKey() string { return "app:" + strconv.FormatInt(c.appID, 10) }

// HasBudget reports whether this client keeps the budget named name (a
// github.Turn's Budget): one of its credentials' that it has used.
func (c *Client) HasBudget(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.budgets[name]
	return ok
}

// budgetLocked returns the credential's budget, making it the first time;
// c.mu is held. Limits were validated in New, so making one cannot fail.
func (c *Client) budgetLocked(key string) *budget.Budget {
	if b := c.budgets[key]; b != nil {
		return b
	}
	var meter budget.Meter
	if c.meters != nil {
		meter = c.meters(key)
	}
	b, err := budget.New(budget.Options{Name: key, Limits: c.limits, Meter: meter, Now: c.now, Sleep: c.sleep})
	if err != nil {
		panic("rest: budget limits were validated in New: " + err.Error())
	}
	c.budgets[key] = b
	return b
}

// Limits are the limits every credential's budget applies, defaults
// filled in.
func (c *Client) Limits() budget.Limits { return c.limits }

func (c *Client) appBudget() *budget.Budget {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.budgetLocked(c.appBudgetKey())
}

// Budgets returns what each credential's budget did — calls that waited
// and for how long, calls held back (paced, or during a penalty), GitHub's
// refusals — keyed "installation:<id>", "app:<id>" (token mints and
// installation look-ups) or "token".
func (c *Client) Budgets() map[string]budget.Stats {
	c.mu.Lock()
	budgets := maps.Clone(c.budgets)
	c.mu.Unlock()
	out := make(map[string]budget.Stats, len(budgets))
	for k, b := range budgets {
		out[k] = b.Stats()
	}
	return out
}

// ReadyAt says when a call of this method for owner could go without
// waiting: now, or when its installation's budget has the points, the
// primary budget resets, or a penalty GitHub imposed ends — and, before
// the installation's first token, when the App's budget lets the token
// request go. It never sends a request: an owner whose installation is not
// known yet is ready when the App's budget lets the look-up and the token
// request go, and an owner or installation GitHub set aside (not
// installed, refused) answers the error a call there would meet, until
// its recheck is due.
func (c *Client) ReadyAt(ctx context.Context, owner github.Owner, method string) (time.Time, error) {
	inst, known, err := c.knownInstallation(owner)
	if err != nil {
		return time.Time{}, err
	}
	mint := budget.Cost(http.MethodPost)
	if !known {
		return c.appBudget().ReadyAt(ctx, budget.Cost(http.MethodGet)+mint)
	}
	at, err := inst.calls.ReadyAt(ctx, budget.Cost(method))
	if err != nil || inst.mints == nil || inst.minted.Load() {
		return at, err
	}
	minting, err := inst.mints.ReadyAt(ctx, mint)
	if minting.After(at) {
		at = minting
	}
	return at, err
}
