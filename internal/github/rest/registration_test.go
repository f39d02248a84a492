package rest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
)

// A registration token is minted for each kind of owner at its own
// endpoint, through the installation's token, and counted as its own
// operation.
func TestRegistrationTokenForEveryOwnerKind(t *testing.T) {
	srv := fakeGitHub(t)
	c := appClient(t, srv, testInstallationID, nil)
	ctx := context.Background()
	routes := map[github.Owner]string{
		orgOwner:  githubtest.RouteOrgRegistrationToken,
		repoOwner: githubtest.RouteRepoRegistrationToken,
		entOwner:  githubtest.RouteEnterpriseRegistrationToken,
	}
	for owner, route := range routes {
		before := time.Now()
		tok, err := c.RegistrationToken(ctx, owner)
		if err != nil {
			t.Fatalf("%s: %v", owner, err)
		}
		minted := srv.RegistrationTokens()
		if last := minted[len(minted)-1]; tok.Token != last.Token {
			t.Errorf("%s: token %q, the fake minted %q", owner, tok.Token, last.Token)
		}
		if d := tok.ExpiresAt.Sub(before); d < 59*time.Minute || d > 61*time.Minute {
			t.Errorf("%s: expires in %v, want about an hour", owner, d)
		}
		if n := srv.CallCount(route); n != 1 {
			t.Errorf("%s: %d calls to %s, want 1", owner, n, route)
		}
	}
	if n := c.Calls().ByOperation[rest.OpCreateRegistrationToken]; n != 3 {
		t.Errorf("%d calls counted as %s, want 3", n, rest.OpCreateRegistrationToken)
	}
}

// A rate-limited mint comes back as the port's *github.RateLimitError, so
// the scale-set client's caller waits for the reset rather than failing.
func TestRegistrationTokenRateLimitIsTheBudgetsError(t *testing.T) {
	srv := fakeGitHub(t)
	c := appClient(t, srv, testInstallationID, nil)
	srv.Inject(githubtest.RouteOrgRegistrationToken, githubtest.TooManyRequests(time.Minute).Times(1))
	_, err := c.RegistrationToken(context.Background(), orgOwner)
	var rl *github.RateLimitError
	if !errors.As(err, &rl) {
		t.Fatalf("err = %v, want a *github.RateLimitError", err)
	}
	if _, err := c.RegistrationToken(context.Background(), github.Owner{}); err == nil {
		t.Error("an empty owner was accepted")
	}
}
