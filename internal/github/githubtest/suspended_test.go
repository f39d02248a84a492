package githubtest_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github/githubtest"
)

// A suspended installation is still found, with suspended_at set, but its
// tokens are refused (403 "This installation has been suspended"), and so
// are calls with a token issued before; lifting it restores both.
func TestASuspendedInstallationIsFoundButRefusesTokens(t *testing.T) {
	key := githubtest.GenerateAppKey(t)
	srv := githubtest.NewServer(t, githubtest.WithApp(testAppID, key.PublicKey), githubtest.WithAppInstallation(testAppID, testInstallationID, testOrg))
	srv.AddOrg(testOrg)
	ctx := context.Background()
	client := installationClient(t, srv, srv.URL(), key.PrivateKeyPEM, testInstallationID)
	if _, _, err := client.Actions.ListOrganizationRunners(ctx, testOrg, nil); err != nil {
		t.Fatal(err)
	}
	srv.SuspendInstallation(testInstallationID)

	// The token issued before: refused.
	_, resp, err := client.Actions.ListOrganizationRunners(ctx, testOrg, nil)
	if resp == nil || resp.StatusCode != http.StatusForbidden || !strings.Contains(err.Error(), "This installation has been suspended") {
		t.Fatalf("a call with the token issued before: %v, want 403 suspended", err)
	}
	// A new token: refused.
	fresh := installationClient(t, srv, srv.URL(), key.PrivateKeyPEM, testInstallationID)
	_, _, err = fresh.Actions.ListOrganizationRunners(ctx, testOrg, nil)
	var he *ghinstallation.HTTPError
	if !errors.As(err, &he) || he.Response.StatusCode != http.StatusForbidden {
		t.Fatalf("a token for the suspended installation: %v, want 403", err)
	}
	// The look-up: found, suspended.
	app := appClientForTest(t, srv, key.PrivateKeyPEM)
	inst, _, err := app.Apps.FindOrganizationInstallation(ctx, testOrg)
	if err != nil || inst.GetID() != testInstallationID || inst.SuspendedAt == nil {
		t.Fatalf("look-up of the suspended installation: %+v, %v; want it, suspended", inst, err)
	}

	srv.UnsuspendInstallation(testInstallationID)
	if _, _, err := fresh.Actions.ListOrganizationRunners(ctx, testOrg, nil); err != nil {
		t.Fatalf("after the suspension was lifted: %v", err)
	}
}

// A refused App gets 403 to every request its JWT authenticates (the
// look-up, a token) until it is accepted again.
func TestARefusedAppIsAnswered403(t *testing.T) {
	key := githubtest.GenerateAppKey(t)
	srv := githubtest.NewServer(t, githubtest.WithApp(testAppID, key.PublicKey), githubtest.WithAppInstallation(testAppID, testInstallationID, testOrg))
	srv.AddOrg(testOrg)
	ctx := context.Background()
	srv.RefuseApp(testAppID)
	app := appClientForTest(t, srv, key.PrivateKeyPEM)
	if _, resp, err := app.Apps.FindOrganizationInstallation(ctx, testOrg); resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("look-up by a refused App: %v, want 403", err)
	}
	client := installationClient(t, srv, srv.URL(), key.PrivateKeyPEM, testInstallationID)
	var he *ghinstallation.HTTPError
	if _, _, err := client.Actions.ListOrganizationRunners(ctx, testOrg, nil); !errors.As(err, &he) || he.Response.StatusCode != http.StatusForbidden {
		t.Fatalf("a token for a refused App: %v, want 403", err)
	}
	srv.AcceptApp(testAppID)
	if _, _, err := app.Apps.FindOrganizationInstallation(ctx, testOrg); err != nil {
		t.Fatalf("look-up once accepted: %v", err)
	}
}

// appClientForTest authenticates as the App itself (its JWT).
func appClientForTest(t *testing.T, srv *githubtest.Server, privateKey []byte) *gh.Client {
	t.Helper()
	tr, err := ghinstallation.NewAppsTransport(http.DefaultTransport, testAppID, privateKey)
	if err != nil {
		t.Fatal(err)
	}
	tr.BaseURL = strings.TrimSuffix(srv.URL(), "/")
	return withBaseURL(t, gh.NewClient(&http.Client{Transport: tr}), srv.URL())
}
