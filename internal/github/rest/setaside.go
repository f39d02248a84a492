package rest

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"

	"github.com/runfleet/runfleet/internal/github"
)

// An App GitHub answered it cannot use somewhere is set aside there: an
// owner its installation look-up found nothing on (404: not installed), an
// owner its look-up was refused on, or an installation whose token GitHub
// refused (403, not a rate limit: the App or the installation is
// suspended). Until the recheck, a call there fails at once with the
// error GitHub's answer was, and ReadyAt says so without a request: with
// several Apps (internal/github/spread) every call asks every App when it
// could go, and an App that cannot go must not cost a request — nor wait
// for its own pacing — each time.

// setAsideReason is why GitHub said the App cannot be used there.
type setAsideReason int

const (
	// notInstalled: the installation look-up answered 404.
	notInstalled setAsideReason = iota + 1
	// refused: the installation look-up or the token request answered 403
	// that is not a rate limit.
	refused
)

// absentRecheck is how long an owner GitHub said the App is not installed
// on is believed: an App installed since is used within that time.
const absentRecheck = 10 * time.Minute

// Refused Apps are asked again after refusedRecheckFirst, twice as long
// after each refusal in a row, never longer than refusedRecheckMax (the
// secondary limit's backoff): a suspension is lifted by a person, so
// asking often gains nothing, yet one lifted must be seen within minutes.
const (
	refusedRecheckFirst = time.Minute
	refusedRecheckMax   = 15 * time.Minute
)

// recheckAfter is how long runfleet leaves an owner or installation alone
// after GitHub's answers-th answer in a row that the App cannot be used
// there. A 404 is definitive until someone installs the App, so it is
// believed for a fixed time; a refusal backs off.
func recheckAfter(reason setAsideReason, answers int) time.Duration {
	if reason == notInstalled {
		return absentRecheck
	}
	d := refusedRecheckFirst
	for i := 1; i < answers && d < refusedRecheckMax; i++ {
		d *= 2
	}
	return min(d, refusedRecheckMax)
}

// setAside is what runfleet remembers of one owner's look-up or one
// installation's token that GitHub answered the App cannot use.
type setAside struct {
	reason setAsideReason
	// answers is how many such answers GitHub gave in a row.
	answers int
	// until is when GitHub is asked again.
	until time.Time
	// err is what a call there returns meanwhile.
	err error
}

// RefusedError: GitHub refused the App on an owner (its installation
// look-up) or refused an installation's token, with a 403 that is not a
// rate limit — the App or its installation is suspended, or its access
// was revoked. runfleet sends nothing there until RetryAt; with several
// Apps the others make the calls. It wraps the *github.PermissionError
// GitHub's answer is, so errors.Is(err, github.ErrMisconfigured) holds.
type RefusedError struct {
	AppID int64
	// InstallationID is the installation whose token GitHub refused; 0
	// when it refused the installation look-up.
	InstallationID int64
	// Owner is the owner the call was for.
	Owner string
	// Refusals is how many times in a row GitHub refused.
	Refusals int
	// RetryAt is when runfleet asks GitHub again.
	RetryAt time.Time
	// Err is GitHub's answer, classified.
	Err error
}

func (e *RefusedError) Error() string {
	what := fmt.Sprintf("the installation look-up of App %d at %s", e.AppID, e.Owner)
	if e.InstallationID != 0 {
		what = fmt.Sprintf("tokens of installation %d (App %d)", e.InstallationID, e.AppID)
	}
	return fmt.Sprintf("github: GitHub refused %s %d time(s) in a row (is the App or its installation suspended?); not asked again before %s: %v",
		what, e.Refusals, e.RetryAt.UTC().Format(time.RFC3339), e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// ownerAsideKey and installationAsideKey name what is set aside.
func ownerAsideKey(owner github.Owner) string { return "owner:" + strings.ToLower(owner.String()) }

func installationAsideKey(id int64) string { return installationBudgetKey(id) }

// asideNow returns the error of what key names while it is set aside.
// Once its recheck is due, the first caller is let through to ask GitHub
// and the recheck moved on by one more period, so concurrent callers do
// not all ask at once and a caller that never gets an answer (its budget
// held it back) leaves it set aside no longer than that.
func (c *Client) asideNow(key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.aside[key]
	if a == nil {
		return nil
	}
	now := c.now()
	if now.Before(a.until) {
		return a.err
	}
	a.until = now.Add(recheckAfter(a.reason, a.answers))
	return nil
}

// isAside reports whether key is set aside now, changing nothing: a
// recheck that is due is left to a call (ReadyAt must not claim it for a
// call that may go through another App).
func (c *Client) isAside(key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a := c.aside[key]; a != nil && c.now().Before(a.until) {
		return a.err
	}
	return nil
}

// putAside remembers GitHub's answer that the App cannot be used at key
// and returns the error calls there return until the recheck. A refusal
// is logged at warn with the App and what was refused: an operator has to
// lift a suspension.
func (c *Client) putAside(key string, reason setAsideReason, owner github.Owner, installationID int64, answer error) error {
	c.mu.Lock()
	a := c.aside[key]
	if a == nil || a.reason != reason {
		a = &setAside{reason: reason}
		c.aside[key] = a
	}
	a.answers++
	now := c.now()
	a.until = now.Add(recheckAfter(reason, a.answers))
	a.err = answer
	if reason == refused {
		a.err = &RefusedError{AppID: c.appID, InstallationID: installationID, Owner: owner.String(), Refusals: a.answers, RetryAt: a.until, Err: answer}
	}
	err, answers, until := a.err, a.answers, a.until
	c.mu.Unlock()
	if reason == refused {
		c.log.Warn("GitHub refused the App; no call goes through it there until the recheck",
			"app_id", c.appID, "installation_id", installationID, "owner", owner.String(),
			"refusals", answers, "retry_at", until.UTC(), "error", answer)
	}
	return err
}

// clearAside forgets key after GitHub answered a call there.
func (c *Client) clearAside(key string) {
	c.mu.Lock()
	a := c.aside[key]
	delete(c.aside, key)
	c.mu.Unlock()
	if a != nil && a.reason == refused {
		c.log.Info("GitHub accepts the App again", "app_id", c.appID, "set_aside", key, "refusals", a.answers)
	}
}

// installationRefused reports whether err (a call's, classified as
// classified) is GitHub refusing the installation rather than the one
// call: a 403 that is not a rate limit to its token request, or to a
// call made with a token issued before the installation was suspended
// (GitHub says "This installation has been suspended"). Any other 403 is
// a permission the call lacks, which other calls may not need.
func installationRefused(err, classified error) bool {
	var pe *github.PermissionError
	if !errors.As(classified, &pe) {
		return false
	}
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		return he.Response.StatusCode == http.StatusForbidden
	}
	return statusOf(err) == http.StatusForbidden && strings.Contains(strings.ToLower(messageOf(err)), "suspended")
}

// AppRefusals counts, by App id, the owners and installations GitHub
// refuses this client's App on (runfleet_github_app_refused): 0 for an
// App it accepts everywhere; nothing with a personal access token.
func (c *Client) AppRefusals() map[int64]int {
	if c.key == nil {
		return map[int64]int{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, a := range c.aside {
		if a.reason == refused {
			n++
		}
	}
	return map[int64]int{c.appID: n}
}
