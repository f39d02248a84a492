package githubtest_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/bradleyfalzon/ghinstallation/v2"
	gh "github.com/google/go-github/v57/github"

	"github.com/runfleet/runfleet/internal/github/githubtest"
)

const (
	testAppID          int64 = 4242
	testInstallationID int64 = 777
	testOrg                  = "octo-org"
	testRepo                 = "octo-org/hello-world"
	testEnterprise           = "acme"
	testPAT                  = "ghp_testPersonalAccessToken0123456789"
)

// appServer starts a fake with one App installed on testOrg, the org, a repo
// and an enterprise, and returns a go-github client authenticated the way
// runfleet authenticates: ghinstallation with the App's private key.
func appServer(t *testing.T, opts ...githubtest.Option) (*githubtest.Server, *gh.Client) {
	t.Helper()
	key := githubtest.GenerateAppKey(t)
	opts = append([]githubtest.Option{
		githubtest.WithApp(testAppID, key.PublicKey),
		githubtest.WithInstallation(testInstallationID, ""),
	}, opts...)
	srv := githubtest.NewServer(t, opts...)
	srv.AddOrg(testOrg)
	srv.AddRepo(testRepo)
	srv.AddEnterprise(testEnterprise)
	return srv, installationClient(t, srv, srv.URL(), key.PrivateKeyPEM, testInstallationID)
}

func installationClient(t *testing.T, srv *githubtest.Server, base string, privateKey []byte, installationID int64) *gh.Client {
	t.Helper()
	tr, err := ghinstallation.New(http.DefaultTransport, testAppID, installationID, privateKey)
	if err != nil {
		t.Fatalf("ghinstallation.New: %v", err)
	}
	tr.BaseURL = strings.TrimSuffix(base, "/")
	return withBaseURL(t, gh.NewClient(&http.Client{Transport: tr}), base)
}

// withBaseURL points a client at base as is: go-github's WithEnterpriseURLs
// would add /api/v3/, which only the GHES test wants.
func withBaseURL(t *testing.T, client *gh.Client, base string) *gh.Client {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	client.BaseURL = u
	return client
}

func patClient(t *testing.T, srv *githubtest.Server) *gh.Client {
	t.Helper()
	return withBaseURL(t, gh.NewClient(nil).WithAuthToken(testPAT), srv.URL())
}

func jitRequest(name string, labels ...string) *gh.GenerateJITConfigRequest {
	if len(labels) == 0 {
		labels = []string{"self-hosted", "linux", "x64"}
	}
	return &gh.GenerateJITConfigRequest{Name: name, RunnerGroupID: githubtest.DefaultRunnerGroupID, Labels: labels}
}

func TestGenerateOrgJITConfigWithAppAuth(t *testing.T) {
	srv, client := appServer(t)
	ctx := context.Background()

	jit, resp, err := client.Actions.GenerateOrgJITConfig(ctx, testOrg, jitRequest("runfleet-linux-1"))
	if err != nil {
		t.Fatalf("GenerateOrgJITConfig: %v", err)
	}
	if resp.StatusCode != http.StatusCreated || jit.GetEncodedJITConfig() == "" || jit.Runner.GetID() == 0 || jit.Runner.GetName() != "runfleet-linux-1" {
		t.Fatalf("JIT answer %d %+v", resp.StatusCode, jit)
	}
	if resp.Rate.Limit != githubtest.DefaultRateLimit || resp.Rate.Remaining != githubtest.DefaultRateLimit-1 || resp.Rate.Reset.IsZero() {
		t.Errorf("rate = %+v, want the installation's first call counted", resp.Rate)
	}
	runners := srv.Runners()
	if len(runners) != 1 || runners[0].ID != jit.Runner.GetID() || runners[0].Owner != testOrg || !runners[0].Ephemeral ||
		runners[0].EncodedJITConfig != jit.GetEncodedJITConfig() {
		t.Fatalf("registered runners = %+v", runners)
	}
	if got := srv.CallCount(githubtest.RouteAccessTokens); got != 1 {
		t.Errorf("installation token requests = %d, want 1", got)
	}
	calls := srv.Calls()
	if last := calls[len(calls)-1]; last.Route != "POST /orgs/{org}/actions/runners/generate-jitconfig" || last.Identity != "installation:777" {
		t.Errorf("last call = %+v", last)
	}
}

func TestJITNameTakenIs409(t *testing.T) {
	_, client := appServer(t)
	ctx := context.Background()
	if _, _, err := client.Actions.GenerateRepoJITConfig(ctx, "octo-org", "hello-world", jitRequest("r1")); err != nil {
		t.Fatal(err)
	}
	_, resp, err := client.Actions.GenerateRepoJITConfig(ctx, "octo-org", "hello-world", jitRequest("R1"))
	var ghErr *gh.ErrorResponse
	if !errors.As(err, &ghErr) || resp.StatusCode != http.StatusConflict || !strings.Contains(ghErr.Message, "A runner with the name R1 already exists") {
		t.Fatalf("second JIT with a taken name: %v", err)
	}
}

func TestDeleteBusyRunnerIs422ThenGoneIs404(t *testing.T) {
	srv, client := appServer(t)
	ctx := context.Background()
	jit, _, err := client.Enterprise.GenerateEnterpriseJITConfig(ctx, testEnterprise, jitRequest("ent-1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := srv.ConnectRunner(jit.GetEncodedJITConfig()); !ok {
		t.Fatal("ConnectRunner did not find the JIT runner")
	}
	srv.SetBusy("ent-1", true)
	resp, err := client.Enterprise.RemoveRunner(ctx, testEnterprise, jit.Runner.GetID())
	var ghErr *gh.ErrorResponse
	if !errors.As(err, &ghErr) || resp.StatusCode != http.StatusUnprocessableEntity || ghErr.Message != `Runner "ent-1" is still running a job` {
		t.Fatalf("deleting a busy runner: %v", err)
	}
	if !srv.FinishRunner("ent-1") {
		t.Fatal("FinishRunner: runner unknown")
	}
	if len(srv.Runners()) != 0 {
		t.Fatal("a JIT runner must remove itself after its job")
	}
	resp, err = client.Enterprise.RemoveRunner(ctx, testEnterprise, jit.Runner.GetID())
	if resp == nil || resp.StatusCode != http.StatusNotFound || err == nil {
		t.Fatalf("deleting a gone runner: %v", err)
	}
}

func TestPATAndGHESBase(t *testing.T) {
	srv := githubtest.NewServer(t, githubtest.WithToken(testPAT))
	srv.AddOrg(testOrg)
	client, err := gh.NewClient(nil).WithAuthToken(testPAT).WithEnterpriseURLs(srv.GHESURL(), srv.GHESURL())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 3 {
		if _, _, err := client.Actions.GenerateOrgJITConfig(ctx, testOrg, jitRequest("pat-"+string(rune('a'+i)))); err != nil {
			t.Fatalf("JIT %d: %v", i, err)
		}
	}
	list, resp, err := client.Actions.ListOrganizationRunners(ctx, testOrg, &gh.ListOptions{PerPage: 2})
	if err != nil {
		t.Fatal(err)
	}
	if list.TotalCount != 3 || len(list.Runners) != 2 || resp.NextPage != 2 || resp.LastPage != 2 {
		t.Fatalf("page 1: total %d, %d runners, next %d last %d", list.TotalCount, len(list.Runners), resp.NextPage, resp.LastPage)
	}
	if !strings.Contains(resp.Header.Get("Link"), githubtest.GHESPathPrefix+"/orgs/") {
		t.Errorf("Link header must keep the GHES prefix: %s", resp.Header.Get("Link"))
	}
	list, resp, err = client.Actions.ListOrganizationRunners(ctx, testOrg, &gh.ListOptions{PerPage: 2, Page: resp.NextPage})
	if err != nil || len(list.Runners) != 1 || resp.NextPage != 0 || resp.PrevPage != 1 {
		t.Fatalf("page 2: %v %+v next %d", err, list, resp.NextPage)
	}
	if c := srv.Calls()[0]; c.Path != "/orgs/octo-org/actions/runners/generate-jitconfig" || c.Route != githubtest.RouteOrgJITConfig {
		t.Errorf("calls record the path without the GHES prefix: %+v", srv.Calls()[0])
	}
}

func TestUnauthenticatedAndBadCredentials(t *testing.T) {
	srv := githubtest.NewServer(t, githubtest.WithToken(testPAT))
	srv.AddOrg(testOrg)
	ctx := context.Background()
	anon := withBaseURL(t, gh.NewClient(nil), srv.URL())
	_, resp, err := anon.Actions.ListOrganizationRunners(ctx, testOrg, nil)
	if resp == nil || resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("X-RateLimit-Limit") == "" {
		t.Fatalf("no credentials: %v", err)
	}
	wrong := withBaseURL(t, gh.NewClient(nil).WithAuthToken("ghp_wrong"), srv.URL())
	_, resp, err = wrong.Actions.ListOrganizationRunners(ctx, testOrg, nil)
	var ghErr *gh.ErrorResponse
	if !errors.As(err, &ghErr) || resp.StatusCode != http.StatusUnauthorized || ghErr.Message != "Bad credentials" {
		t.Fatalf("wrong token: %v", err)
	}
}
