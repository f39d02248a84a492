package scaleset

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/github"
)

// RegistrationToken is a runner registration token from the REST API
// (POST .../actions/runners/registration-token). It is a secret.
type RegistrationToken struct {
	Token     string
	ExpiresAt time.Time
}

// RegistrationTokenSource mints registration tokens for an owner: the
// caller's REST client (an App installation token or a PAT behind it).
// This package never sees those credentials.
type RegistrationTokenSource interface {
	RegistrationToken(ctx context.Context, owner github.Owner) (RegistrationToken, error)
}

// adminConnection is what registration returns: the Actions service's URL
// and the admin token every scale-set call carries.
type adminConnection struct {
	url       string
	token     string
	expiresAt time.Time // zero when the token's expiry is unreadable
}

// registrationAnswer is the body of POST {api}/actions/runner-registration.
type registrationAnswer struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// connection returns a usable admin connection, registering when there is
// none or it expires within AdminRefreshMargin. Renewal reuses the
// registration token while it is valid for RegistrationTokenMargin more,
// so renewing the admin token does not mint a registration token (nor,
// behind it, an installation token) each time.
func (c *Client) connection(ctx context.Context) (adminConnection, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if a := c.admin; a.token != "" && (a.expiresAt.IsZero() || now.Add(c.cfg.AdminRefreshMargin).Before(a.expiresAt)) {
		return a, nil
	}
	a, err := c.register(ctx, now)
	if errors.Is(err, ErrUnauthorized) && c.reg.Token != "" {
		// The cached registration token was refused (revoked, or used up
		// in a way the facts do not describe): mint one and try once more.
		c.log.InfoContext(ctx, "scaleset: registration refused a cached registration token; minting a new one", "owner", c.cfg.Owner.String())
		c.reg = RegistrationToken{}
		a, err = c.register(ctx, now)
	}
	if err != nil {
		return adminConnection{}, err
	}
	c.admin = a
	return a, nil
}

// forgetAdmin drops the admin token the Actions service refused, unless
// another call has already replaced it.
func (c *Client) forgetAdmin(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.admin.token == token {
		c.admin = adminConnection{}
	}
}

// register exchanges a registration token for an admin connection. The
// caller holds c.mu.
func (c *Client) register(ctx context.Context, now time.Time) (adminConnection, error) {
	if c.reg.Token == "" || !now.Add(c.cfg.RegistrationTokenMargin).Before(c.reg.ExpiresAt) {
		mintCtx, cancel := context.WithTimeout(ctx, c.cfg.CallTimeout)
		rt, err := c.cfg.Tokens.RegistrationToken(mintCtx, c.cfg.Owner)
		cancel()
		if err != nil {
			return adminConnection{}, fmt.Errorf("scaleset: minting a registration token for %s: %w", c.cfg.Owner, err)
		}
		if rt.Token == "" {
			return adminConnection{}, &Error{Op: "mint registration token", Kind: ErrBadResponse, Err: errors.New("empty token")}
		}
		if rt.ExpiresAt.IsZero() {
			rt.ExpiresAt = now.Add(time.Hour) // GitHub: "expires after one hour"
		}
		c.reg = rt
		c.log.InfoContext(ctx, "scaleset: minted a registration token", "owner", c.cfg.Owner.String(), "expires_at", rt.ExpiresAt)
	}
	var ans registrationAnswer
	_, err := c.send(ctx, call{
		op:     "register with the Actions service",
		method: http.MethodPost,
		url:    c.apiURL + "/actions/runner-registration",
		auth:   "RemoteAuth " + c.reg.Token,
		body:   map[string]string{"url": c.configURL, "runner_event": "register"},
		ok:     []int{http.StatusOK, http.StatusCreated},
		out:    &ans,
	})
	if err != nil {
		return adminConnection{}, err
	}
	if ans.URL == "" || ans.Token == "" {
		return adminConnection{}, &Error{Op: "register with the Actions service", Kind: ErrBadResponse, Err: errors.New("the answer lacks the service URL or the admin token")}
	}
	a := adminConnection{url: strings.TrimSuffix(ans.URL, "/") + "/", token: ans.Token, expiresAt: jwtExpiry(ans.Token)}
	c.log.InfoContext(ctx, "scaleset: registered with the Actions service", "owner", c.cfg.Owner.String(), "admin_token_expires_at", a.expiresAt)
	return a, nil
}

// jwtExpiry reads the exp claim of a JWT without verifying it (the token
// is the service's, not ours to check); zero when unreadable, and then
// the token is used until the service refuses it.
func jwtExpiry(token string) time.Time {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp json.Number `json:"exp"`
	}
	if json.Unmarshal(raw, &claims) != nil {
		return time.Time{}
	}
	secs, err := claims.Exp.Int64()
	if err != nil || secs <= 0 {
		return time.Time{}
	}
	return time.Unix(secs, 0)
}

// service makes an Actions-service call: path is relative to the service
// URL. A 401 drops the admin token, re-registers and sends once more.
func (c *Client) service(ctx context.Context, path string, k call) (int, error) {
	for attempt := 0; ; attempt++ {
		a, err := c.connection(ctx)
		if err != nil {
			return 0, err
		}
		k.url = withAPIVersion(a.url + path)
		k.auth = "Bearer " + a.token
		status, err := c.send(ctx, k)
		var e *Error
		if attempt == 0 && errors.As(err, &e) && e.StatusCode == http.StatusUnauthorized {
			c.log.InfoContext(ctx, "scaleset: the Actions service refused the admin token; registering again", "op", k.op)
			c.forgetAdmin(a.token)
			continue
		}
		return status, err
	}
}
