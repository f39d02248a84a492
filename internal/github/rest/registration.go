package rest

import (
	"context"
	"errors"
	"fmt"

	gogithub "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/scaleset"
)

// The REST client mints the runner registration tokens a scale-set client
// exchanges for its Actions-service connection (scaleset.Config.Tokens):
// the scale-set client never sees the App key, the installation token or
// the PAT behind them.
var _ scaleset.RegistrationTokenSource = (*Client)(nil)

// RegistrationToken mints a runner registration token for owner
// (POST {orgs/o | repos/o/r | enterprises/e}/actions/runners/registration-token),
// through the owner's installation and its rate budget like every other
// call. GitHub's tokens last an hour; the scale-set client caches and
// reuses one, so this is called about once an hour per owner.
func (c *Client) RegistrationToken(ctx context.Context, owner github.Owner) (scaleset.RegistrationToken, error) {
	if err := checkOwner(owner); err != nil {
		return scaleset.RegistrationToken{}, err
	}
	inst, err := c.installationFor(ctx, owner)
	if err != nil {
		return scaleset.RegistrationToken{}, err
	}
	var tok *gogithub.RegistrationToken
	if _, err := c.call(ctx, inst, OpCreateRegistrationToken, owner, func(ctx context.Context, gh *gogithub.Client) (*gogithub.Response, error) {
		var resp *gogithub.Response
		var err error
		tok, resp, err = createRegistrationToken(ctx, gh, owner)
		return resp, err
	}); err != nil {
		return scaleset.RegistrationToken{}, err
	}
	if tok.GetToken() == "" {
		return scaleset.RegistrationToken{}, fmt.Errorf("github: registration token for %s: %w", owner, errors.New("the answer has no token"))
	}
	return scaleset.RegistrationToken{Token: tok.GetToken(), ExpiresAt: tok.GetExpiresAt().Time}, nil
}

func createRegistrationToken(ctx context.Context, gh *gogithub.Client, o github.Owner) (*gogithub.RegistrationToken, *gogithub.Response, error) {
	switch {
	case o.Enterprise != "":
		return gh.Enterprise.CreateRegistrationToken(ctx, o.Enterprise)
	case o.Repo != "":
		return gh.Actions.CreateRegistrationToken(ctx, o.Org, o.Repo)
	default:
		return gh.Actions.CreateOrganizationRegistrationToken(ctx, o.Org)
	}
}
