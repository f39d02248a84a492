package githubtest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	gh "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/testclock"
)

// Off by default: a client far past GitHub's 900 points a minute is never
// refused by a fake that was not asked to model it.
func TestSecondaryLimitsAreOffByDefault(t *testing.T) {
	srv, client := appServer(t)
	for i := range 200 { // 1,000 points
		registerOrgRunner(t, client, fmt.Sprintf("r%d", i))
	}
	if n := srv.SecondaryRefusals(); n != 0 {
		t.Fatalf("%d refusals with the model off", n)
	}
}

// On: past the points of a minute the call is go-github's secondary rate
// limit with retry-after 60, every call during the penalty is refused and
// extends it, and the window frees a minute after the penalty.
func TestSecondaryLimitPointsAndPenalty(t *testing.T) {
	clock := testclock.AtRealNow() // the client signs its JWTs with the real clock
	srv, client := appServer(t, githubtest.WithClock(clock.Now), githubtest.WithSecondaryLimits(githubtest.SecondaryLimits{PointsPerMinute: 12}))
	ctx := context.Background()
	registerOrgRunner(t, client, "r1") // 5 points (the token mint is the App's)
	registerOrgRunner(t, client, "r2") // 10
	_, _, err := client.Actions.GenerateOrgJITConfig(ctx, testOrg, jitRequest("r3"))
	var abuse *gh.AbuseRateLimitError
	if !errors.As(err, &abuse) || abuse.RetryAfter == nil || *abuse.RetryAfter != time.Minute {
		t.Fatalf("15 points in a minute of 12: %T %v, want a secondary limit with retry-after 60 s", err, err)
	}
	clock.Advance(50 * time.Second)
	// go-github refuses locally until retry-after: ask over its transport.
	get := func() int {
		t.Helper()
		resp, err := client.Client().Get(srv.URL() + "orgs/" + testOrg + "/actions/runners")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if got := get(); got != http.StatusForbidden {
		t.Fatalf("a GET during the penalty: %d, want 403", got)
	}
	clock.Advance(59 * time.Second) // 109 s: past the first penalty, inside the extended one
	if got := get(); got != http.StatusForbidden {
		t.Fatalf("a call inside the extended penalty: %d, want 403", got)
	}
	clock.Advance(61 * time.Second)
	if got := get(); got != http.StatusOK {
		t.Fatalf("after the penalty: %d, want 200", got)
	}
	if n := srv.SecondaryRefusals(); n != 3 {
		t.Errorf("refusals %d, want 3", n)
	}
}

// On, with one request in flight allowed: a second request with the same
// credential while the first is still being sent is refused.
func TestSecondaryLimitInFlight(t *testing.T) {
	srv, client := appServer(t, githubtest.WithSecondaryLimits(githubtest.SecondaryLimits{MaxInFlight: 1, Status: http.StatusTooManyRequests}))
	registerOrgRunner(t, client, "r1") // mints the token the two requests share
	body, hold := io.Pipe()
	slow := make(chan error, 1)
	go func() {
		req, _ := client.NewRequest(http.MethodPost, "orgs/"+testOrg+"/actions/runners/generate-jitconfig", nil)
		req.Body = body
		_, err := client.Do(context.Background(), req, nil)
		slow <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for srv.SecondaryRefusals() == 0 && time.Now().Before(deadline) {
		_, _, _ = client.Actions.ListOrganizationRunners(context.Background(), testOrg, nil)
	}
	_ = hold.Close()
	<-slow
	if srv.SecondaryRefusals() == 0 {
		t.Fatal("no call refused while another was in flight")
	}
	for _, c := range srv.Calls() {
		if c.Status == http.StatusTooManyRequests {
			return
		}
	}
	t.Error("the refusal did not answer the configured 429")
}
