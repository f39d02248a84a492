package githubtest_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/testclock"
)

// registerOrgRunner registers a JIT runner and returns its id.
func registerOrgRunner(t *testing.T, client *gh.Client, name string) int64 {
	t.Helper()
	jit, _, err := client.Actions.GenerateOrgJITConfig(context.Background(), testOrg, jitRequest(name))
	if err != nil {
		t.Fatalf("GenerateOrgJITConfig(%s): %v", name, err)
	}
	return jit.Runner.GetID()
}

func TestPrimaryRateLimitFaultIsGoGithubsRateLimitError(t *testing.T) {
	srv, client := appServer(t)
	id := registerOrgRunner(t, client, "r1")
	reset := time.Now().Add(90 * time.Second).Truncate(time.Second)
	srv.Inject(githubtest.RouteOrgRemoveRunner, githubtest.PrimaryRateLimit(reset).Times(1))

	_, err := client.Actions.RemoveOrganizationRunner(context.Background(), testOrg, id)
	var rl *gh.RateLimitError
	if !errors.As(err, &rl) {
		t.Fatalf("err = %T %v, want *github.RateLimitError", err, err)
	}
	if rl.Response.StatusCode != http.StatusForbidden || rl.Rate.Remaining != 0 || !rl.Rate.Reset.Time.Equal(reset) ||
		rl.Message != "API rate limit exceeded for installation ID 777." {
		t.Fatalf("rate limit error = %d remaining %d reset %v message %q", rl.Response.StatusCode, rl.Rate.Remaining, rl.Rate.Reset, rl.Message)
	}
	if _, ok := srv.RunnerByName("r1"); !ok {
		t.Fatal("a faulted delete without AndApply must not remove the runner")
	}
}

func TestPrimaryRateLimitAs429(t *testing.T) {
	srv, client := appServer(t)
	f := githubtest.PrimaryRateLimit(time.Now().Add(time.Minute))
	f.Status = http.StatusTooManyRequests
	srv.Inject(githubtest.RouteOrgRunners, f.Times(1))
	_, resp, err := client.Actions.ListOrganizationRunners(context.Background(), testOrg, nil)
	var ghErr *gh.ErrorResponse
	// go-github v57 classifies only 403s as rate limits: a 429 comes back as
	// a plain *ErrorResponse whose headers the client must read itself.
	if !errors.As(err, &ghErr) || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("err = %T %v", err, err)
	}
}

func TestSecondaryRateLimitFaults(t *testing.T) {
	srv, client := appServer(t)
	ctx := context.Background()

	srv.Inject(githubtest.RouteOrgJITConfig, githubtest.SecondaryRateLimit(42*time.Second).Times(1))
	_, _, err := client.Actions.GenerateOrgJITConfig(ctx, testOrg, jitRequest("r1"))
	var abuse *gh.AbuseRateLimitError
	if !errors.As(err, &abuse) || abuse.RetryAfter == nil || *abuse.RetryAfter != 42*time.Second ||
		!strings.HasPrefix(abuse.Message, "You have exceeded a secondary rate limit") {
		t.Fatalf("403 secondary: err = %T %v", err, err)
	}

	// go-github now refuses calls itself until the retry-after passes: a
	// fresh client reaches the server.
	srv.AddToken(testPAT)
	client = patClient(t, srv)
	srv.Inject(githubtest.RouteOrgJITConfig, githubtest.TooManyRequests(7*time.Second).Times(1))
	_, resp, err := client.Actions.GenerateOrgJITConfig(ctx, testOrg, jitRequest("r1"))
	var ghErr *gh.ErrorResponse
	if errors.As(err, &abuse) || !errors.As(err, &ghErr) || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "7" {
		t.Fatalf("429: err = %T %v, Retry-After %q", err, err, resp.Header.Get("Retry-After"))
	}
	if len(srv.Runners()) != 0 {
		t.Fatal("faulted JIT calls registered a runner")
	}
	if _, _, err := client.Actions.GenerateOrgJITConfig(ctx, testOrg, jitRequest("r1")); err != nil {
		t.Fatalf("after the faults ran out: %v", err)
	}
}

func TestErrorYetCreate(t *testing.T) {
	srv, client := appServer(t)
	ctx := context.Background()
	srv.Inject(githubtest.RouteOrgJITConfig, githubtest.ServerError(http.StatusBadGateway).Times(1).AndApply())

	_, resp, err := client.Actions.GenerateOrgJITConfig(ctx, testOrg, jitRequest("r1"))
	if err == nil || resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("first JIT: %v", err)
	}
	if _, ok := srv.RunnerByName("r1"); !ok {
		t.Fatal("AndApply: GitHub answered an error yet registered the runner")
	}
	_, resp, err = client.Actions.GenerateOrgJITConfig(ctx, testOrg, jitRequest("r1"))
	if err == nil || resp.StatusCode != http.StatusConflict {
		t.Fatalf("retry with the same name: %v, want 409", err)
	}

	id := registerOrgRunner(t, client, "r2")
	srv.Inject("DELETE /orgs/octo-org/actions/runners/*", githubtest.ServerError(http.StatusInternalServerError).Times(1).AndApply())
	resp, err = client.Actions.RemoveOrganizationRunner(ctx, testOrg, id)
	if err == nil || resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("faulted delete: %v", err)
	}
	if _, ok := srv.RunnerByName("r2"); ok {
		t.Fatal("AndApply on delete must remove the runner")
	}
	if resp, _ = client.Actions.RemoveOrganizationRunner(ctx, testOrg, id); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("delete again: %d, want 404", resp.StatusCode)
	}
}

func TestFaultCountsAndCallCounting(t *testing.T) {
	srv, client := appServer(t)
	ctx := context.Background()
	srv.Inject("* /orgs/{org}/actions/runners", githubtest.ServerError(http.StatusServiceUnavailable).Times(2))
	for i, want := range []int{503, 503, 200, 200} {
		_, resp, _ := client.Actions.ListOrganizationRunners(ctx, testOrg, nil)
		if resp.StatusCode != want {
			t.Fatalf("call %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
	if n := srv.CallCount(githubtest.RouteOrgRunners); n != 4 {
		t.Errorf("CallCount(list) = %d, want 4", n)
	}
	if n := srv.CallCount("GET /orgs/octo-org/actions/runners"); n != 4 {
		t.Errorf("CallCount(concrete path) = %d, want 4", n)
	}
	if n := srv.APICallCount(); n != 4 {
		t.Errorf("APICallCount = %d, want 4 (token requests excluded)", n)
	}
	faulted := 0
	for _, c := range srv.Calls() {
		if c.Faulted {
			faulted++
		}
	}
	if faulted != 2 {
		t.Errorf("%d calls marked Faulted, want 2", faulted)
	}
	srv.ResetCalls()
	if n := srv.CallCount("*"); n != 0 {
		t.Errorf("after ResetCalls: %d calls", n)
	}

	srv.Inject(githubtest.RouteOrgRunners, githubtest.NotFound())
	for range 3 {
		if _, resp, _ := client.Actions.ListOrganizationRunners(ctx, testOrg, nil); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("a fault without Times answers every call: %d", resp.StatusCode)
		}
	}
	srv.ClearFaults()
	if _, _, err := client.Actions.ListOrganizationRunners(ctx, testOrg, nil); err != nil {
		t.Fatalf("after ClearFaults: %v", err)
	}
}

func TestBusyAndForbiddenFaults(t *testing.T) {
	srv, client := appServer(t)
	ctx := context.Background()
	id := registerOrgRunner(t, client, "idle-but-faulted")
	srv.Inject(githubtest.RouteOrgRemoveRunner, githubtest.Busy().Times(1))
	resp, err := client.Actions.RemoveOrganizationRunner(ctx, testOrg, id)
	var ghErr *gh.ErrorResponse
	if !errors.As(err, &ghErr) || resp.StatusCode != http.StatusUnprocessableEntity || ghErr.Message != `Runner "idle-but-faulted" is still running a job` {
		t.Fatalf("busy fault: %v", err)
	}
	srv.Inject(githubtest.RouteOrgRemoveRunner, githubtest.Forbidden().Times(1))
	resp, err = client.Actions.RemoveOrganizationRunner(ctx, testOrg, id)
	var rl *gh.RateLimitError
	if errors.As(err, &rl) || !errors.As(err, &ghErr) || resp.StatusCode != http.StatusForbidden || ghErr.Message != "Resource not accessible by integration" {
		t.Fatalf("forbidden fault: %T %v", err, err)
	}
	if _, err := client.Actions.RemoveOrganizationRunner(ctx, testOrg, id); err != nil {
		t.Fatalf("delete after the faults: %v", err)
	}
}

func TestPrimaryRateLimitRunsOut(t *testing.T) {
	key := githubtest.GenerateAppKey(t)
	srv := githubtest.NewServer(t, githubtest.WithApp(testAppID, key.PublicKey),
		githubtest.WithInstallation(testInstallationID, ""), githubtest.WithRateLimit(2))
	srv.AddOrg(testOrg)
	client := installationClient(t, srv, srv.URL(), key.PrivateKeyPEM, testInstallationID)
	ctx := context.Background()
	for i := range 2 {
		_, resp, err := client.Actions.ListOrganizationRunners(ctx, testOrg, nil)
		if err != nil || resp.Rate.Remaining != 1-i {
			t.Fatalf("call %d: %v remaining %d", i, err, resp.Rate.Remaining)
		}
	}
	// A second client of the same installation: go-github's first client
	// would refuse the call itself, knowing the limit is spent.
	other := installationClient(t, srv, srv.URL(), key.PrivateKeyPEM, testInstallationID)
	_, _, err := other.Actions.ListOrganizationRunners(ctx, testOrg, nil)
	var rl *gh.RateLimitError
	if !errors.As(err, &rl) || rl.Rate.Remaining != 0 || rl.Response.StatusCode != http.StatusForbidden {
		t.Fatalf("third call: %T %v, want *RateLimitError", err, err)
	}
	limits := srv.RateLimits()["installation:777"]
	if limits.Limit != 2 || limits.Remaining != 0 {
		t.Errorf("RateLimits = %+v", limits)
	}
}

func TestExhaustRateLimit(t *testing.T) {
	srv := githubtest.NewServer(t, githubtest.WithToken(testPAT))
	srv.AddOrg(testOrg)
	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	srv.ExhaustRateLimit(reset)
	_, _, err := patClient(t, srv).Actions.ListOrganizationRunners(context.Background(), testOrg, nil)
	var rl *gh.RateLimitError
	if !errors.As(err, &rl) || !rl.Rate.Reset.Time.Equal(reset) || !strings.Contains(rl.Message, "user ID") {
		t.Fatalf("err = %T %v", err, err)
	}
}

func TestInstallationTokensAreCachedAndRefreshed(t *testing.T) {
	srv, client := appServer(t)
	ctx := context.Background()
	for range 3 {
		if _, _, err := client.Actions.ListOrganizationRunners(ctx, testOrg, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.CallCount(githubtest.RouteAccessTokens); n != 1 {
		t.Fatalf("token requests = %d, want 1 for a client reused across calls", n)
	}

	// Tokens that expire within ghinstallation's one-minute margin are
	// fetched again for every call.
	srv2, client2 := appServer(t, githubtest.WithTokenTTL(30*time.Second))
	for range 2 {
		if _, _, err := client2.Actions.ListOrganizationRunners(ctx, testOrg, nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv2.CallCount(githubtest.RouteAccessTokens); n != 2 {
		t.Fatalf("short-lived tokens: %d requests, want 2", n)
	}
}

func TestInstallationOnAnotherAccountIsForbidden(t *testing.T) {
	key := githubtest.GenerateAppKey(t)
	srv := githubtest.NewServer(t, githubtest.WithApp(testAppID, key.PublicKey), githubtest.WithInstallation(5, "other-org"))
	srv.AddOrg(testOrg)
	srv.AddOrg("other-org")
	client := installationClient(t, srv, srv.URL(), key.PrivateKeyPEM, 5)
	ctx := context.Background()
	if _, _, err := client.Actions.ListOrganizationRunners(ctx, "other-org", nil); err != nil {
		t.Fatalf("own account: %v", err)
	}
	_, resp, err := client.Actions.ListOrganizationRunners(ctx, testOrg, nil)
	if err == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("other account: %v", err)
	}
	wrongKey := githubtest.GenerateAppKey(t)
	forged := installationClient(t, srv, srv.URL(), wrongKey.PrivateKeyPEM, 5)
	if _, _, err := forged.Actions.ListOrganizationRunners(ctx, "other-org", nil); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a JWT signed with another key must be refused: %v", err)
	}
}

func TestExhaustionEndsAtItsResetTime(t *testing.T) {
	clock := testclock.At(time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC))
	now := clock.Now()
	srv := githubtest.NewServer(t, githubtest.WithToken(testPAT), githubtest.WithClock(clock.Now))
	srv.AddOrg(testOrg)
	srv.ExhaustRateLimit(now.Add(time.Minute))
	client := patClient(t, srv)
	ctx := context.Background()
	_, resp, err := client.Actions.ListOrganizationRunners(ctx, testOrg, nil)
	var rl *gh.RateLimitError
	if !errors.As(err, &rl) || resp.Header.Get("X-RateLimit-Reset") != strconv.FormatInt(now.Add(time.Minute).Unix(), 10) {
		t.Fatalf("during exhaustion: %v, reset %s", err, resp.Header.Get("X-RateLimit-Reset"))
	}
	clock.Advance(61 * time.Second)
	// go-github remembers the reset on the real clock: a fresh client.
	if _, _, err := patClient(t, srv).Actions.ListOrganizationRunners(ctx, testOrg, nil); err != nil {
		t.Fatalf("after the reset: %v", err)
	}
}

func TestOwnersMatchCaseInsensitively(t *testing.T) {
	srv := githubtest.NewServer(t, githubtest.WithToken(testPAT))
	srv.AddOrg("Octo-Org")
	client := patClient(t, srv)
	if _, _, err := client.Actions.GenerateOrgJITConfig(context.Background(), "octo-org", jitRequest("r1")); err != nil {
		t.Fatal(err)
	}
	if r, _ := srv.RunnerByName("R1"); r.Owner != "Octo-Org" {
		t.Fatalf("runner owner = %q, want the owner as added", r.Owner)
	}
}
