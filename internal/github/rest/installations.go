package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gogithub "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github"
)

// installationFor returns the cached client that acts for owner: with a
// token, the one client; with an App, the owner's installation (the event's,
// else the configured default, else looked up once per owner).
func (c *Client) installationFor(ctx context.Context, owner github.Owner) (*installation, error) {
	if c.key == nil {
		return c.installation(0)
	}
	id := owner.InstallationID
	if id == 0 {
		id = c.defInst
	}
	if id == 0 {
		var err error
		if id, err = c.discoverInstallation(ctx, owner); err != nil {
			return nil, err
		}
	}
	if err := c.asideNow(installationAsideKey(id)); err != nil {
		return nil, err
	}
	return c.installation(id)
}

// installation returns the client for one installation id, building it the
// first time. Building is cheap (no request: the token is minted on the
// first call), so it happens under the lock.
func (c *Client) installation(id int64) (*installation, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if inst := c.installations[id]; inst != nil {
		return inst, nil
	}
	inst := &installation{id: id}
	if c.key == nil {
		inst.calls = c.budgetLocked(budgetKeyToken)
	} else {
		inst.calls, inst.mints = c.budgetLocked(installationBudgetKey(id)), c.budgetLocked(c.appBudgetKey())
	}
	observed := &observer{next: c.base, telemetry: &c.telemetry, installationID: id, log: c.log}
	paced := &pacer{next: observed, calls: inst.calls, mints: inst.mints, now: c.now}
	if inst.mints != nil {
		paced.minted = &inst.minted
	}
	var rt http.RoundTripper
	if c.key == nil {
		rt = &bearer{token: c.token, next: paced}
	} else {
		// One AppsTransport per installation: ghinstallation writes to it
		// while refreshing a token, so sharing one would race.
		rt = ghinstallation.NewFromAppsTransport(ghinstallation.NewAppsTransportFromPrivateKey(paced, c.appID, c.key), id)
	}
	gh, err := c.newGoGitHub(rt)
	if err != nil {
		return nil, err
	}
	if itr, ok := rt.(*ghinstallation.Transport); ok {
		// Tokens are minted under the same API root (GHES: .../api/v3).
		itr.BaseURL = apiRoot(gh)
	}
	inst.gh = gh
	c.installations[id] = inst
	return inst, nil
}

// bearer adds a personal access token to each request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}

// appGitHub is the client that authenticates as the App itself (a JWT), for
// finding an owner's installation.
func (c *Client) appGitHub() (*gogithub.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.appClient != nil {
		return c.appClient, nil
	}
	observed := &observer{next: c.base, telemetry: &c.telemetry, log: c.log}
	paced := &pacer{next: observed, calls: c.budgetLocked(c.appBudgetKey()), now: c.now}
	gh, err := c.newGoGitHub(ghinstallation.NewAppsTransportFromPrivateKey(paced, c.appID, c.key))
	if err != nil {
		return nil, err
	}
	c.appClient = gh
	return gh, nil
}

// ErrNoInstallation: the App is not installed where runners should
// register, or runfleet cannot tell which installation to use.
var ErrNoInstallation = fmt.Errorf("%w: no App installation for this owner", github.ErrMisconfigured)

// discoverInstallation asks GitHub which installation of the App covers an
// organization or repository (one call per owner per process). Enterprise
// owners must name theirs: webhooks carry it, or set
// github.app.installation_id. An owner GitHub answers 404 (not installed)
// or 403 (refused) for is set aside (setaside.go).
func (c *Client) discoverInstallation(ctx context.Context, owner github.Owner) (int64, error) {
	key := strings.ToLower(owner.String())
	c.mu.Lock()
	id, ok := c.found[key]
	c.mu.Unlock()
	if ok {
		return id, nil
	}
	if owner.Enterprise != "" {
		return 0, fmt.Errorf("%w: %s: enterprise installations are not looked up; set github.app.installation_id", ErrNoInstallation, owner)
	}
	aside := ownerAsideKey(owner)
	if err := c.asideNow(aside); err != nil {
		return 0, err
	}
	gh, err := c.appGitHub()
	if err != nil {
		return 0, err
	}
	ctx = withOp(ctx, OpFindInstallation)
	var found *gogithub.Installation
	if owner.Repo != "" {
		found, _, err = gh.Apps.FindRepositoryInstallation(ctx, owner.Org, owner.Repo)
	} else {
		found, _, err = gh.Apps.FindOrganizationInstallation(ctx, owner.Org)
	}
	if statusOf(err) == http.StatusNotFound {
		return 0, c.putAside(aside, notInstalled, owner, 0,
			fmt.Errorf("%w: %s: the App is not installed there (install it, or set github.app.installation_id)", ErrNoInstallation, owner))
	}
	if err != nil {
		classified := classify(ctx, c.appBudget(), nil, c.now(), OpFindInstallation, owner, err)
		var pe *github.PermissionError
		if statusOf(err) == http.StatusForbidden && errors.As(classified, &pe) {
			return 0, c.putAside(aside, refused, owner, 0, classified)
		}
		return 0, classified
	}
	id = found.GetID()
	if id == 0 {
		return 0, fmt.Errorf("%w: %s: GitHub answered without an installation id", ErrNoInstallation, owner)
	}
	c.clearAside(aside)
	c.mu.Lock()
	c.found[key] = id
	c.mu.Unlock()
	c.log.Debug("found the App installation for an owner", "owner", owner.String(), "installation_id", id)
	return id, nil
}

// knownInstallation is installationFor without a request: the owner's
// installation when runfleet knows it (known false when it would have to
// look it up first), or the error a call would meet at once because
// GitHub's answer set the owner or the installation aside.
func (c *Client) knownInstallation(owner github.Owner) (inst *installation, known bool, err error) {
	if c.key == nil {
		inst, err := c.installation(0)
		return inst, err == nil, err
	}
	id := owner.InstallationID
	if id == 0 {
		id = c.defInst
	}
	if id == 0 {
		if err := c.isAside(ownerAsideKey(owner)); err != nil {
			return nil, false, err
		}
		c.mu.Lock()
		id = c.found[strings.ToLower(owner.String())]
		c.mu.Unlock()
		if id == 0 {
			return nil, false, nil
		}
	}
	if err := c.isAside(installationAsideKey(id)); err != nil {
		return nil, false, err
	}
	inst, err = c.installation(id)
	return inst, err == nil, err
}
