package rest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gogithub "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/budget"
)

// classify turns what go-github (or ghinstallation, minting a token)
// returned into the port's errors: *github.RateLimitError for every kind of
// rate limit, *github.PermissionError for a 403 that is not one, and
// otherwise the error wrapped with the operation and owner — an
// *gogithub.ErrorResponse stays reachable with errors.As (statusOf).
// b and mints are the budgets the call and its token mint spent (either
// may be nil): their penalties say how long a rate limit lasts.
func classify(ctx context.Context, b, mints *budget.Budget, now time.Time, op string, owner github.Owner, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("github: %s at %s: %w", op, owner, err)
	}
	if rl := rateLimitOf(ctx, b, mints, now, err); rl != nil {
		return rl
	}
	var er *gogithub.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		switch er.Response.StatusCode {
		case http.StatusForbidden:
			return &github.PermissionError{Op: op + " at " + owner.String(), Message: er.Message + " — " + permissionHint(op, owner)}
		case http.StatusUnauthorized:
			return fmt.Errorf("github: %s at %s: bad credentials (401): check the App id and private key, or the token: %w", op, owner, err)
		}
	}
	var he *ghinstallation.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		switch he.Response.StatusCode {
		case http.StatusUnauthorized:
			return fmt.Errorf("github: minting a token for installation %d: GitHub refused the App's credentials (check github.app.id and the private key): %w", he.InstallationID, err)
		case http.StatusNotFound:
			return fmt.Errorf("%w: installation %d does not exist for this App (was it uninstalled? check github.app.installation_id): %v", ErrNoInstallation, he.InstallationID, err)
		case http.StatusForbidden:
			return &github.PermissionError{Op: fmt.Sprintf("minting a token for installation %d", he.InstallationID), Message: err.Error() + " — is the installation suspended?"}
		}
	}
	return fmt.Errorf("github: %s at %s: %w", op, owner, err)
}

// statusOf is the HTTP status of a GitHub error answer, or 0.
func statusOf(err error) int {
	var er *gogithub.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}

// messageOf is GitHub's message in an error answer, else the error text.
func messageOf(err error) string {
	var er *gogithub.ErrorResponse
	if errors.As(err, &er) && er.Message != "" {
		return er.Message
	}
	return err.Error()
}

// permissionHint names what to grant for op at owner: reading jobs needs
// Actions, everything else the runner permissions.
func permissionHint(op string, owner github.Owner) string {
	switch {
	case op == OpRerunJob:
		return fmt.Sprintf("re-running workflow jobs as %s: grant the App the repository permission \"Actions: Read and write\" and accept it on the installation (a token needs the repo scope)", owner)
	case op == OpGetJob:
		return fmt.Sprintf("reading workflow jobs as %s: grant the App the repository permission \"Actions: Read-only\" and accept it on the installation (a token needs the repo scope)", owner)
	case op == OpListDeliveries || op == OpGetDelivery:
		return fmt.Sprintf("reading the webhook delivery log of %s: grant the App the permission \"Webhooks: Read-only\" of the owner (a classic token needs admin:org_hook for an organization's webhook, admin:repo_hook for a repository's)", owner)
	case owner.Enterprise != "":
		return fmt.Sprintf("enterprise %s: GitHub's enterprise runner endpoints refuse App installation tokens; use a classic personal access token with the manage_runners:enterprise scope (github.token_file/token_env)", owner.Enterprise)
	case owner.Repo != "":
		return fmt.Sprintf("repository %s: grant the App the repository permission \"Administration: Read and write\" and accept it on the installation (a token needs the repo scope)", owner)
	default:
		return fmt.Sprintf("organization %s: grant the App the organization permission \"Self-hosted runners: Read and write\" and accept it on the installation (a token needs the admin:org scope)", owner)
	}
}
