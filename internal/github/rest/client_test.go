package rest_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/testlog"
)

var (
	orgOwner  = github.Owner{Org: testOrg}
	repoOwner = github.Owner{Org: "octo-org", Repo: "hello-world"}
	entOwner  = github.Owner{Enterprise: testEnterprise}
	labels    = []string{"self-hosted", "linux", "x64", "runfleet-controller-test"}
)

func jitFor(owner github.Owner, name string) github.JITRequest {
	return github.JITRequest{Owner: owner, Name: name, Labels: labels}
}

func TestJITForEveryOwnerKindWithOneTokenPerInstallation(t *testing.T) {
	srv := fakeGitHub(t)
	logs := &testlog.Buffer{}
	c := appClient(t, srv, testInstallationID, logs)
	ctx := context.Background()
	for i, owner := range []github.Owner{orgOwner, repoOwner, entOwner} {
		name := fmt.Sprintf("runfleet-linux-%d-1", i)
		cfg, err := c.GenerateJITConfig(ctx, jitFor(owner, name))
		if err != nil {
			t.Fatalf("%s: %v", owner, err)
		}
		r, ok := srv.RunnerByName(name)
		if !ok || r.ID != cfg.RunnerID || r.Owner != owner.String() || cfg.EncodedJITConfig != r.EncodedJITConfig {
			t.Fatalf("%s: registered %+v, got id %d", owner, r, cfg.RunnerID)
		}
		if strings.Join(r.Labels, ",") != strings.Join(labels, ",") || r.GroupID != githubtest.DefaultRunnerGroupID {
			t.Errorf("%s: labels %v group %d", owner, r.Labels, r.GroupID)
		}
		listed, err := c.ListRunners(ctx, owner)
		if err != nil || len(listed) != 1 || listed[0].ID != cfg.RunnerID || listed[0].Name != name || listed[0].Status != "offline" || listed[0].Busy {
			t.Fatalf("%s: listed %+v, %v", owner, listed, err)
		}
		if err := c.RemoveRunner(ctx, github.RunnerRef{Owner: owner, ID: cfg.RunnerID, Name: name}); err != nil {
			t.Fatalf("%s: remove: %v", owner, err)
		}
		if _, ok := srv.RunnerByName(name); ok {
			t.Fatalf("%s: runner still registered", owner)
		}
	}
	// One installation token served all nine calls; the client was reused.
	if got := srv.CallCount(githubtest.RouteAccessTokens); got != 1 {
		t.Errorf("token mints = %d, want 1", got)
	}
	calls := c.Calls()
	if calls.Total != 10 || calls.API() != 9 || calls.ByOperation[rest.OpGenerateJITConfig] != 3 ||
		calls.ByOperation[rest.OpListRunners] != 3 || calls.ByOperation[rest.OpRemoveRunner] != 3 ||
		calls.ByOperation[rest.OpCreateInstallationToken] != 1 {
		t.Errorf("calls %+v", calls)
	}
	if int(calls.Total) != srv.CallCount("*") {
		t.Errorf("client counted %d calls, GitHub answered %d", calls.Total, srv.CallCount("*"))
	}
	rate, ok := c.RateLimits()[testInstallationID]
	if !ok || rate.Limit != githubtest.DefaultRateLimit || rate.Remaining != githubtest.DefaultRateLimit-9 || rate.Reset.IsZero() {
		t.Errorf("rate limit %+v (recorded: %v)", rate, ok)
	}
	if len(logs.WithMessage(t, "github rate limit")) != 9 {
		t.Errorf("want a debug line per API answer:\n%s", logs.Tail(12))
	}
	if strings.Contains(logs.String(), "PRIVATE KEY") || strings.Contains(logs.String(), "ghs_") {
		t.Error("a secret reached the logs")
	}
}

func TestPersonalAccessToken(t *testing.T) {
	srv := fakeGitHub(t)
	c, err := rest.New(rest.Options{BaseURL: srv.URL(), Token: testPAT})
	if err != nil {
		t.Fatal(err)
	}
	// api.github.com-style root: WithEnterpriseURLs adds /api/v3, which the
	// fake also serves; the point is the token and the owner routing.
	cfg, err := c.GenerateJITConfig(context.Background(), jitFor(repoOwner, "runfleet-pat-1-1"))
	if err != nil {
		t.Fatal(err)
	}
	calls := srv.Calls()
	if len(calls) != 1 || !strings.HasPrefix(calls[0].Identity, "token:") || cfg.RunnerID == 0 {
		t.Fatalf("calls %+v", calls)
	}
	if _, ok := c.RateLimits()[0]; !ok {
		t.Error("no rate limit recorded for the token (id 0)")
	}
}

func TestRunnerGroupsResolveByNameOncePerOwner(t *testing.T) {
	srv := fakeGitHub(t)
	orgGroup := srv.AddRunnerGroup(testOrg, "Linux Fleet")
	entGroup := srv.AddRunnerGroup("enterprise:"+testEnterprise, "linux-fleet")
	c := appClient(t, srv, testInstallationID, nil)
	ctx := context.Background()
	for i := range 3 {
		req := jitFor(orgOwner, fmt.Sprintf("runfleet-g-%d-1", i))
		req.RunnerGroup = "linux fleet" // names compare without case
		if _, err := c.GenerateJITConfig(ctx, req); err != nil {
			t.Fatal(err)
		}
		if r, _ := srv.RunnerByName(req.Name); r.GroupID != orgGroup {
			t.Fatalf("runner in group %d, want %d", r.GroupID, orgGroup)
		}
	}
	if got := srv.CallCount(githubtest.RouteOrgRunnerGroups); got != 1 {
		t.Errorf("org runner-group listings = %d, want 1 (cached)", got)
	}
	req := jitFor(entOwner, "runfleet-g-ent-1")
	req.RunnerGroup = "linux-fleet"
	if _, err := c.GenerateJITConfig(ctx, req); err != nil {
		t.Fatal(err)
	}
	if r, _ := srv.RunnerByName(req.Name); r.GroupID != entGroup {
		t.Fatalf("enterprise runner in group %d, want %d", r.GroupID, entGroup)
	}
	// Repositories have no groups: the default, and no listing.
	req = jitFor(repoOwner, "runfleet-g-repo-1")
	req.RunnerGroup = "Linux Fleet"
	if _, err := c.GenerateJITConfig(ctx, req); err != nil {
		t.Fatal(err)
	}
	// The default group never costs a listing either.
	req = jitFor(orgOwner, "runfleet-g-default-1")
	req.RunnerGroup = "Default"
	if _, err := c.GenerateJITConfig(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := srv.CallCount("GET /*/*/actions/runner-groups"); got != 2 {
		t.Errorf("runner-group listings = %d, want 2 (one org, one enterprise)", got)
	}

	req = jitFor(orgOwner, "runfleet-g-missing-1")
	req.RunnerGroup = "gpu"
	_, err := c.GenerateJITConfig(ctx, req)
	if !errors.Is(err, rest.ErrRunnerGroupNotFound) || !strings.Contains(err.Error(), `"Linux Fleet"`) {
		t.Fatalf("err = %v, want ErrRunnerGroupNotFound listing the groups there are", err)
	}
	if _, ok := srv.RunnerByName(req.Name); ok {
		t.Error("a runner was registered for an unknown group")
	}
}

func TestJITRefusesBadRequestsWithoutCalling(t *testing.T) {
	srv := fakeGitHub(t)
	c := appClient(t, srv, testInstallationID, nil)
	for _, req := range []github.JITRequest{
		{Owner: orgOwner, Labels: labels},
		{Owner: orgOwner, Name: "runfleet-x-1-1"},
		{Owner: orgOwner, Name: "runfleet-x-1-1", Labels: make([]string, 101)},
		{Name: "runfleet-x-1-1", Labels: labels},
	} {
		if _, err := c.GenerateJITConfig(context.Background(), req); err == nil {
			t.Errorf("%+v accepted", req)
		}
	}
	if n := srv.CallCount("*"); n != 0 {
		t.Errorf("%d calls reached GitHub", n)
	}
}

func TestNameConflictRecovery(t *testing.T) {
	const name = "runfleet-linux-7-1"
	cases := []struct {
		name      string
		stale     githubtest.Runner
		recovered bool
	}{
		{"idle runner of ours is replaced", githubtest.Runner{Name: name, Labels: labels}, true},
		{"name taken by someone else's runner", githubtest.Runner{Name: "RUNFLEET-linux-7-1", Labels: []string{"self-hosted", "runfleet-controller-other"}}, false},
		{"busy runner of ours is left alone", githubtest.Runner{Name: name, Labels: labels, Busy: true, Status: githubtest.StatusOnline}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeGitHub(t)
			logs := &testlog.Buffer{}
			c := appClient(t, srv, testInstallationID, logs)
			tc.stale.Owner = testOrg
			stale := srv.AddRunner(tc.stale)
			cfg, err := c.GenerateJITConfig(context.Background(), jitFor(orgOwner, name))
			jitCalls := srv.CallCount(githubtest.RouteOrgJITConfig)
			if !tc.recovered {
				if !errors.Is(err, github.ErrRunnerNameTaken) {
					t.Fatalf("err = %v, want ErrRunnerNameTaken", err)
				}
				if r, ok := srv.RunnerByName(name); !ok || r.ID != stale.ID {
					t.Fatal("the runner that holds the name was touched")
				}
				if jitCalls != 1 || srv.CallCount(githubtest.RouteOrgRemoveRunner) != 0 {
					t.Errorf("JIT calls %d, removes %d", jitCalls, srv.CallCount(githubtest.RouteOrgRemoveRunner))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r, ok := srv.RunnerByName(name)
			if !ok || r.ID != cfg.RunnerID || r.ID == stale.ID {
				t.Fatalf("registered %+v, returned id %d, stale id %d", r, cfg.RunnerID, stale.ID)
			}
			// 409, one filtered lookup, one delete, the retry.
			if jitCalls != 2 || srv.CallCount(githubtest.RouteOrgRunners) != 1 || srv.CallCount(githubtest.RouteOrgRemoveRunner) != 1 {
				t.Errorf("calls: %+v", c.Calls())
			}
			if len(logs.WithMessage(t, "removed a stale runner")) != 1 {
				t.Errorf("the removal is not logged:\n%s", logs.Tail(5))
			}
		})
	}
}

// GitHub sometimes registers the runner and still answers with an error;
// the retry meets a 409 for our own runner and recovers.
func TestJITThatErroredButRegisteredIsRecovered(t *testing.T) {
	srv := fakeGitHub(t)
	c := appClient(t, srv, testInstallationID, nil)
	srv.Inject(githubtest.RouteOrgJITConfig, githubtest.ServerError(502).Times(1).AndApply())
	const name = "runfleet-linux-8-1"
	if _, err := c.GenerateJITConfig(context.Background(), jitFor(orgOwner, name)); err == nil || !strings.Contains(err.Error(), "502") {
		t.Fatalf("first attempt: %v, want the 502", err)
	}
	cfg, err := c.GenerateJITConfig(context.Background(), jitFor(orgOwner, name))
	if err != nil {
		t.Fatal(err)
	}
	runners := srv.Runners()
	if len(runners) != 1 || runners[0].ID != cfg.RunnerID {
		t.Fatalf("runners %+v, want exactly the retry's", runners)
	}
}

func TestRemoveByNameAndPagination(t *testing.T) {
	srv := fakeGitHub(t)
	c := appClient(t, srv, testInstallationID, nil)
	ctx := context.Background()
	for i := range 250 {
		srv.AddRunner(githubtest.Runner{Owner: testOrg, Name: fmt.Sprintf("runfleet-p-%03d-1", i), Labels: labels})
	}
	runners, err := c.ListRunners(ctx, orgOwner)
	if err != nil || len(runners) != 250 {
		t.Fatalf("listed %d runners: %v", len(runners), err)
	}
	if got := srv.CallCount(githubtest.RouteOrgRunners); got != 3 {
		t.Errorf("list calls = %d, want 3 pages of 100", got)
	}
	srv.ResetCalls()

	// By name (id 0): one filtered lookup, then the delete.
	if err := c.RemoveRunner(ctx, github.RunnerRef{Owner: orgOwner, Name: "runfleet-p-201-1"}); err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.RunnerByName("runfleet-p-201-1"); ok {
		t.Fatal("runner not removed")
	}
	if srv.CallCount(githubtest.RouteOrgRunners) != 1 || srv.CallCount(githubtest.RouteOrgRemoveRunner) != 1 {
		t.Errorf("calls %+v", srv.Calls())
	}
	// A name that is not there is already gone.
	if err := c.RemoveRunner(ctx, github.RunnerRef{Owner: orgOwner, Name: "runfleet-nobody-1-1"}); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveRunner(ctx, github.RunnerRef{Owner: orgOwner}); err == nil {
		t.Error("a ref with neither id nor name was accepted")
	}
}

func TestFakeGitHubFaultsMapToThePortsErrors(t *testing.T) {
	srv := fakeGitHub(t)
	c := appClient(t, srv, testInstallationID, nil)
	ctx := context.Background()
	cfg, err := c.GenerateJITConfig(ctx, jitFor(orgOwner, "runfleet-f-1-1"))
	if err != nil {
		t.Fatal(err)
	}
	ref := github.RunnerRef{Owner: orgOwner, ID: cfg.RunnerID, Name: "runfleet-f-1-1"}

	srv.SetBusy(ref.Name, true)
	if err := c.RemoveRunner(ctx, ref); !errors.Is(err, github.ErrRunnerBusy) || !strings.Contains(err.Error(), "still running a job") {
		t.Fatalf("busy: %v", err)
	}
	srv.SetBusy(ref.Name, false)

	srv.Inject(githubtest.RouteOrgRemoveRunner, githubtest.Forbidden().Times(1))
	var pe *github.PermissionError
	if err := c.RemoveRunner(ctx, ref); !errors.As(err, &pe) || !strings.Contains(pe.Message, `"Self-hosted runners: Read and write"`) {
		t.Fatalf("forbidden: %v", err)
	}
	srv.Inject(githubtest.RouteOrgRemoveRunner, githubtest.ServerError(503).Times(1))
	if err := c.RemoveRunner(ctx, ref); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("503: %v", err)
	}
	srv.Inject(githubtest.RouteOrgRemoveRunner, githubtest.NotFound().Times(1).AndApply())
	if err := c.RemoveRunner(ctx, ref); err != nil {
		t.Fatalf("404: %v", err)
	}
	if _, ok := srv.RunnerByName(ref.Name); ok {
		t.Fatal("runner not removed")
	}
	// The repository form of the permission hint names Administration.
	srv.Inject(githubtest.RouteRepoRunners, githubtest.Forbidden().Times(1))
	if _, err := c.ListRunners(ctx, repoOwner); !errors.As(err, &pe) || !strings.Contains(pe.Message, "Administration") {
		t.Fatalf("repo forbidden: %v", err)
	}
}

// Calls for different installations use different tokens, from many
// goroutines at once, each installation's client built once.
func TestInstallationsConcurrently(t *testing.T) {
	// The budget paces these 400 points per installation; waits on this
	// clock are instant.
	clock := &testclock.Clock{}
	srv := fakeGitHub(t, githubtest.WithInstallation(888, "other-org"), githubtest.WithClock(clock.Now))
	srv.AddOrg("other-org")
	c, err := rest.New(rest.Options{BaseURL: srv.GHESURL(), AppID: testAppID, PrivateKey: appKey().PrivateKeyPEM, Now: clock.Now, Sleep: clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	other := github.Owner{Org: "other-org", InstallationID: 888}
	mine := github.Owner{Org: testOrg, InstallationID: testInstallationID}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			owner := mine
			if w%2 == 1 {
				owner = other
			}
			for i := range 5 {
				name := fmt.Sprintf("runfleet-c-%d-%d", w, i)
				cfg, err := c.GenerateJITConfig(context.Background(), jitFor(owner, name))
				if err != nil {
					t.Error(err)
					return
				}
				if err := c.RemoveRunner(context.Background(), github.RunnerRef{Owner: owner, ID: cfg.RunnerID}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	byIdentity := map[string]int{}
	for _, call := range srv.Calls() {
		byIdentity[call.Identity]++
	}
	if byIdentity["installation:777"] != 40 || byIdentity["installation:888"] != 40 {
		t.Errorf("calls by identity %v", byIdentity)
	}
	if got := srv.CallCount(githubtest.RouteAccessTokens); got != 2 {
		t.Errorf("token mints = %d, want one per installation", got)
	}
	if rl := c.RateLimits(); len(rl) != 2 {
		t.Errorf("rate limits recorded for %d installations, want 2", len(rl))
	}
	if len(srv.Runners()) != 0 {
		t.Error("runners left behind")
	}
}

func TestNoInstallationIsAClearError(t *testing.T) {
	srv := fakeGitHub(t)
	c := appClient(t, srv, 0, nil)
	_, err := c.ListRunners(context.Background(), entOwner)
	if !errors.Is(err, rest.ErrNoInstallation) || !strings.Contains(err.Error(), "installation_id") {
		t.Fatalf("err = %v", err)
	}
	// An installation that does not exist: token minting fails with 404.
	_, err = c.ListRunners(context.Background(), github.Owner{Org: testOrg, InstallationID: 999})
	if !errors.Is(err, rest.ErrNoInstallation) {
		t.Fatalf("unknown installation: %v", err)
	}
}

func TestNewRejectsBadCredentials(t *testing.T) {
	for _, opts := range []rest.Options{
		{},
		{AppID: 1, PrivateKey: []byte("not a key")},
		{AppID: 1},
		{PrivateKey: appKey().PrivateKeyPEM},
		{AppID: 1, PrivateKey: appKey().PrivateKeyPEM, Token: "x"},
		{Token: "x", BaseURL: "://bad"},
	} {
		if _, err := rest.New(opts); err == nil {
			t.Errorf("%+v accepted", opts.BaseURL)
		} else if strings.Contains(err.Error(), "BEGIN") {
			t.Errorf("error shows key material: %v", err)
		}
	}
}

// Every request is counted by what GitHub answered: ok, error (a 4xx or
// 5xx that is not a rate limit, expected ones included) or rate_limited
// (403 with the budget spent, or 429) — the split the metrics show.
func TestCallsAreCountedByResult(t *testing.T) {
	srv := fakeGitHub(t)
	c := appClient(t, srv, testInstallationID, nil)
	ctx := context.Background()
	if _, err := c.ListRunners(ctx, orgOwner); err != nil {
		t.Fatal(err)
	}
	srv.Inject(githubtest.RouteOrgRunners, githubtest.ServerError(503).Times(1))
	if _, err := c.ListRunners(ctx, orgOwner); err == nil {
		t.Fatal("503 was not an error")
	}
	srv.Inject(githubtest.RouteOrgRunners, githubtest.TooManyRequests(time.Millisecond).Times(1))
	if _, err := c.ListRunners(ctx, orgOwner); err == nil {
		t.Fatal("429 was not an error")
	}
	calls := c.Calls()
	want := map[rest.CallKey]int64{
		{Operation: rest.OpListRunners, Result: rest.CallOK}:             1,
		{Operation: rest.OpListRunners, Result: rest.CallError}:          1,
		{Operation: rest.OpListRunners, Result: rest.CallRateLimited}:    1,
		{Operation: rest.OpCreateInstallationToken, Result: rest.CallOK}: 1,
	}
	if !maps.Equal(calls.ByResult, want) {
		t.Errorf("calls by result %v, want %v", calls.ByResult, want)
	}
	var total int64
	for _, n := range calls.ByResult {
		total += n
	}
	if total != calls.Total {
		t.Errorf("results add up to %d, total is %d", total, calls.Total)
	}
}
