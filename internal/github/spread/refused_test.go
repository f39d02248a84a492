package spread_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/testclock"
)

// Of 8 Apps, one GitHub refuses outright (403 to its installation look-up
// and its tokens: suspended), one is not installed and one's installation
// is suspended (found, but its tokens refused); they are the first three,
// so every tie in the order would try them first. Each costs GitHub one
// answer, then is set aside: the 5 healthy Apps register runners at least
// 0.9 × 5 times as fast as one App alone, every job gets its runner once,
// GitHub refuses nothing for a rate limit, and the whole costs at most
// 1.05 requests a job. The pace is the schedule on a stopped clock (each
// budget wait moves it), not this machine's speed.
func TestRefusedAppsAreSetAsideAndCostNothingPerCall(t *testing.T) {
	const jobs, healthy = 900, 5
	oneClock := testclock.AtRealNow()
	oneSrv, one, _ := apps(t, oneClock, 1)
	oneTook := registerAll(t, oneClock, one, jobs)
	if r := oneSrv.SecondaryRefusals(); r != 0 {
		t.Fatalf("1 App: GitHub refused %d calls", r)
	}

	clock := testclock.AtRealNow()
	srv, g, clients := apps(t, clock, 8, 1) // App 101 is not installed on the org
	srv.RefuseApp(100)                      // App 100: 403 to everything it authenticates
	srv.SuspendInstallation(902)            // App 102: found, its tokens refused
	took := registerAll(t, clock, g, jobs)

	if r := srv.SecondaryRefusals(); r != 0 {
		t.Errorf("GitHub refused %d calls for a rate limit", r)
	}
	names := map[string]bool{}
	for _, r := range srv.Runners() {
		if names[r.Name] {
			t.Errorf("runner %s registered twice", r.Name)
		}
		names[r.Name] = true
	}
	if len(names) != jobs {
		t.Errorf("%d runners registered for %d jobs", len(names), jobs)
	}
	requests := float64(srv.CallCount("*")) / jobs
	speedup := float64(oneTook) / float64(took)
	t.Logf("%d jobs: 1 App %s; 8 Apps of which 3 refused, suspended or not installed %s (%.2f× one App, want ≥ %.1f×); %.3f GitHub requests a job",
		jobs, oneTook, took, speedup, 0.9*healthy, requests)
	if speedup < 0.9*healthy {
		t.Errorf("the %d healthy Apps registered %d runners %.2f× as fast as one; want ≥ %.1f×", healthy, jobs, speedup, 0.9*healthy)
	}
	if requests > 1.05 {
		t.Errorf("%.3f GitHub requests a job; want ≤ 1.05", requests)
	}
	// Each broken App cost GitHub one answer: the burst is shorter than
	// the first recheck.
	for identity, route := range map[string]string{
		"app:100": githubtest.RouteOrgInstallation, "app:101": githubtest.RouteOrgInstallation, "app:102": githubtest.RouteAccessTokens,
	} {
		if n := callsBy(srv, identity, route); n != 1 {
			t.Errorf("%s: %d requests to %s, want 1", identity, n, route)
		}
	}
	want := map[int64]int{100: 1, 101: 0, 102: 1, 103: 0, 104: 0, 105: 0, 106: 0, 107: 0}
	if got := g.AppRefusals(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("AppRefusals() = %v, want %v", got, want)
	}
	// A call through the suspended installation's App: the burst outlasted
	// the first recheck, so GitHub is asked once more and refuses again;
	// the next call sends nothing. Either meets a *rest.RefusedError.
	call := func() (*rest.RefusedError, int) {
		t.Helper()
		before := srv.CallCount("*")
		_, err := clients[2].GenerateJITConfig(context.Background(), github.JITRequest{Owner: owner, Name: "runfleet-x", Labels: []string{"self-hosted"}})
		var refused *rest.RefusedError
		if !errors.As(err, &refused) || refused.InstallationID != 902 || refused.AppID != 102 || !errors.Is(err, github.ErrMisconfigured) {
			t.Fatalf("a call through the suspended installation: %v, want a *rest.RefusedError for installation 902", err)
		}
		return refused, srv.CallCount("*") - before
	}
	if refused, sent := call(); sent != 1 || refused.Refusals != 2 || !refused.RetryAt.Equal(clock.Now().Add(2*time.Minute)) {
		t.Errorf("the recheck sent %d requests, refusal %d until %s; want 1, the 2nd, 2 minutes", sent, refused.Refusals, refused.RetryAt.Sub(clock.Now()))
	}
	if _, sent := call(); sent != 0 {
		t.Errorf("a call through the suspended installation before its recheck sent %d requests", sent)
	}
}

// A refused App is asked again when its recheck is due, and used once
// GitHub accepts it.
func TestARefusedAppIsAskedAgainLater(t *testing.T) {
	clock := testclock.AtRealNow()
	srv, g, clients := apps(t, clock, 2)
	srv.RefuseApp(100)
	ctx := context.Background()
	lookups := func() int { return callsBy(srv, "app:100", githubtest.RouteOrgInstallation) }
	register := func(name string) {
		t.Helper()
		for {
			_, err := g.GenerateJITConfig(ctx, github.JITRequest{Owner: owner, Name: name, Labels: []string{"self-hosted"}})
			var paced *github.RateLimitError
			if errors.As(err, &paced) && paced.Paced {
				clock.AdvanceTo(paced.RetryAt)
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return
		}
	}
	for i := range 5 {
		register(fmt.Sprintf("runfleet-r-%d", i))
	}
	if n := lookups(); n != 1 {
		t.Fatalf("%d look-ups by the refused App, want 1", n)
	}
	srv.AcceptApp(100)
	clock.Advance(time.Minute) // the first recheck
	for i := 5; i < 20; i++ {
		register(fmt.Sprintf("runfleet-r-%d", i))
	}
	if n := lookups(); n != 2 {
		t.Fatalf("%d look-ups by the App after its recheck, want 2", n)
	}
	if got := clients[0].AppRefusals()[100]; got != 0 {
		t.Fatalf("App 100 still counted refused (%d) after GitHub accepted it", got)
	}
	if callsBy(srv, "installation:900", githubtest.RouteOrgJITConfig) == 0 {
		t.Fatal("App 100 made no runner once GitHub accepted it")
	}
}

// callsBy counts the fake's calls of route made as identity.
func callsBy(srv *githubtest.Server, identity, route string) int {
	n := 0
	for _, c := range srv.Calls() {
		if c.Identity == identity && c.Route == route {
			n++
		}
	}
	return n
}
