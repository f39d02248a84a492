package rest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
)

// With no installation id from the event or the config (the reconciler's
// calls), the client asks GitHub, as the App, which installation covers the
// owner — once per owner.
func TestInstallationIsLookedUpOncePerOwner(t *testing.T) {
	const installation = 555
	srv := githubtest.NewServer(t, githubtest.WithApp(testAppID, appKey().PublicKey), githubtest.WithInstallation(installation, testOrg))
	srv.AddOrg(testOrg)
	srv.AddOrg("elsewhere") // an organization the App is not installed on
	c, err := rest.New(rest.Options{BaseURL: srv.GHESURL(), AppID: testAppID, PrivateKey: appKey().PrivateKeyPEM})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := c.ListRunners(context.Background(), github.Owner{Org: testOrg}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, call := range srv.Calls() {
		got = append(got, call.Route+" as "+call.Identity)
	}
	want := []string{
		githubtest.RouteOrgInstallation + " as app:4242",
		githubtest.RouteAccessTokens + " as app:4242",
		githubtest.RouteOrgRunners + " as installation:555",
		githubtest.RouteOrgRunners + " as installation:555",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("requests:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if calls := c.Calls(); calls.ByOperation[rest.OpFindInstallation] != 1 || calls.API() != 2 {
		t.Errorf("calls %+v", calls)
	}
	_, err = c.ListRunners(context.Background(), github.Owner{Org: "elsewhere"})
	if !errors.Is(err, rest.ErrNoInstallation) || !strings.Contains(err.Error(), "not installed") {
		t.Fatalf("err = %v, want ErrNoInstallation", err)
	}
}
