package rest_test

import (
	"context"
	"errors"
	"testing"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/testlog"
)

// GitHub refusing the App — a suspended installation's token, or the
// installation look-up — costs one request: the call meets a
// *rest.RefusedError (a misconfiguration, a *github.PermissionError
// inside), the App is logged at warn and counted refused, and until the
// recheck neither calls nor ReadyAt send anything.
func TestARefusedAppCostsOneRequest(t *testing.T) {
	org := github.Owner{Org: testOrg}
	for _, tc := range []struct {
		name             string
		defaultInst      int64
		refuse           func(*githubtest.Server)
		route            string
		wantInstallation int64
	}{
		{"suspended installation", testInstallationID, func(s *githubtest.Server) { s.SuspendInstallation(testInstallationID) }, githubtest.RouteAccessTokens, testInstallationID},
		{"App refused at its look-up", 0, func(s *githubtest.Server) { s.RefuseApp(testAppID) }, githubtest.RouteOrgInstallation, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeGitHub(t)
			tc.refuse(srv)
			logs := &testlog.Buffer{}
			c := appClient(t, srv, tc.defaultInst, logs)
			ctx := context.Background()
			for i := range 3 {
				_, err := c.ListRunners(ctx, org)
				var refused *rest.RefusedError
				var denied *github.PermissionError
				if !errors.As(err, &refused) || !errors.As(err, &denied) || !errors.Is(err, github.ErrMisconfigured) {
					t.Fatalf("call %d: %v, want a *rest.RefusedError wrapping a *github.PermissionError", i, err)
				}
				if refused.AppID != testAppID || refused.InstallationID != tc.wantInstallation || refused.Refusals != 1 {
					t.Fatalf("call %d: %+v", i, refused)
				}
				if _, err := c.ReadyAt(ctx, org, "GET"); !errors.As(err, &refused) {
					t.Fatalf("ReadyAt after a refusal: %v, want the *rest.RefusedError", err)
				}
			}
			if n := srv.CallCount("*"); n != 1 {
				t.Fatalf("%d requests, want 1 (%v)", n, srv.Calls())
			}
			if n := srv.CallCount(tc.route); n != 1 {
				t.Fatalf("%d requests to %s, want 1", n, tc.route)
			}
			if got := c.AppRefusals(); got[testAppID] != 1 {
				t.Fatalf("AppRefusals() = %v, want 1 for App %d", got, testAppID)
			}
			lines := logs.Lines(t, map[string]any{"level": "WARN", "app_id": testAppID, "refusals": 1})
			if len(lines) != 1 {
				t.Fatalf("%d warn lines naming the App, want 1: %s", len(lines), logs.Tail(5))
			}
		})
	}
}

// Choosing an App sends nothing: ReadyAt for an owner whose installation
// is not known yet answers from the App's budget, and the call looks the
// installation up.
func TestReadyAtSendsNoRequest(t *testing.T) {
	srv := fakeGitHub(t)
	c := appClient(t, srv, 0, nil)
	ctx := context.Background()
	org := github.Owner{Org: testOrg}
	if _, err := c.ReadyAt(ctx, org, "POST"); err != nil {
		t.Fatal(err)
	}
	if n := srv.CallCount("*"); n != 0 {
		t.Fatalf("ReadyAt sent %d requests", n)
	}
	if _, err := c.ListRunners(ctx, org); err != nil {
		t.Fatal(err)
	}
	if n := srv.CallCount(githubtest.RouteOrgInstallation); n != 1 {
		t.Fatalf("%d installation look-ups, want 1", n)
	}
}

// An installation suspended after its token was issued: the first call
// with that token is refused, and the installation is set aside from then.
func TestAnInstallationSuspendedWhileItsTokenLastsIsSetAside(t *testing.T) {
	srv := fakeGitHub(t)
	c := appClient(t, srv, testInstallationID, nil)
	ctx := context.Background()
	org := github.Owner{Org: testOrg}
	if _, err := c.ListRunners(ctx, org); err != nil {
		t.Fatal(err)
	}
	srv.SuspendInstallation(testInstallationID)
	before := srv.CallCount("*")
	for i := range 3 {
		var refused *rest.RefusedError
		if _, err := c.ListRunners(ctx, org); !errors.As(err, &refused) || refused.InstallationID != testInstallationID {
			t.Fatalf("call %d after the suspension: %v, want a *rest.RefusedError for installation %d", i, err, testInstallationID)
		}
	}
	if n := srv.CallCount("*") - before; n != 1 {
		t.Fatalf("%d requests after the suspension, want 1", n)
	}
}
