package spread_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/budget"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/github/spread"
	"github.com/runfleet/runfleet/internal/testclock"
)

const org = "octo-org"

var owner = github.Owner{Org: org}

// apps makes n Apps (ids 100, 101, …), each installed on the org (its
// installation 900+i) unless notInstalled lists it, a fake GitHub that
// enforces the secondary limit per installation, and the spread over
// their clients, all on clock.
func apps(t *testing.T, clock *testclock.Clock, n int, notInstalled ...int) (*githubtest.Server, *spread.GitHub, []*rest.Client) {
	t.Helper()
	key := githubtest.GenerateAppKey(t)
	opts := []githubtest.Option{githubtest.WithClock(clock.Now), githubtest.WithSecondaryLimits(githubtest.SecondaryLimits{})}
	for i := range n {
		opts = append(opts, githubtest.WithApp(int64(100+i), key.PublicKey))
		skip := false
		for _, s := range notInstalled {
			skip = skip || s == i
		}
		if !skip {
			opts = append(opts, githubtest.WithAppInstallation(int64(100+i), int64(900+i), org))
		}
	}
	srv := githubtest.NewServer(t, opts...)
	srv.AddOrg(org)
	var clients []*rest.Client
	var ports []spread.App
	for i := range n {
		c, err := rest.New(rest.Options{BaseURL: srv.GHESURL(), AppID: int64(100 + i), PrivateKey: key.PrivateKeyPEM,
			Now: clock.Now, Sleep: clock.Sleep, Budget: budget.Limits{MaxWait: 100 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		clients, ports = append(clients, c), append(ports, c)
	}
	g, err := spread.New(ports, nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv, g, clients
}

// registerAll registers jobs runners through g, each held back by its
// budget coming back in its turn, as the engine's create does, and returns
// how long the last one took.
func registerAll(t *testing.T, clock *testclock.Clock, g *spread.GitHub, jobs int) time.Duration {
	t.Helper()
	start := clock.Now()
	type waiting struct {
		name string
		turn *github.Turn
	}
	var queue []waiting
	for i := range jobs {
		queue = append(queue, waiting{name: fmt.Sprintf("runfleet-s-%d", i)})
	}
	for len(queue) > 0 {
		var next []waiting
		for _, w := range queue {
			ctx := github.WithTurns(context.Background())
			if w.turn != nil {
				if w.turn.At.After(clock.Now()) {
					next = append(next, w)
					continue
				}
				ctx = github.WithTurn(context.Background(), w.turn)
			}
			_, err := g.GenerateJITConfig(ctx, github.JITRequest{Owner: owner, Name: w.name, Labels: []string{"self-hosted"}})
			var rl *github.RateLimitError
			switch {
			case err == nil:
			case errors.As(err, &rl) && rl.Turn != nil:
				next = append(next, waiting{w.name, rl.Turn})
			default:
				t.Fatalf("%s: %v", w.name, err)
			}
		}
		queue = next
		if len(queue) > 0 {
			clock.Advance(time.Second)
		}
	}
	return clock.Now().Sub(start)
}

// Five Apps register runners five times as fast as one, and GitHub
// refuses none.
func TestSeveralAppsMultiplyThePace(t *testing.T) {
	const jobs = 400
	took := map[int]time.Duration{}
	for _, n := range []int{1, 5} {
		clock := &testclock.Clock{} // App JWTs are signed on real time
		srv, g, _ := apps(t, clock, n)
		took[n] = registerAll(t, clock, g, jobs)
		if r := srv.SecondaryRefusals(); r != 0 {
			t.Fatalf("%d Apps: GitHub refused %d calls", n, r)
		}
		if got := len(srv.Runners()); got != jobs {
			t.Fatalf("%d Apps: %d runners registered, want %d", n, got, jobs)
		}
	}
	speedup := float64(took[1]) / float64(took[5])
	t.Logf("%d runners: 1 App %s, 5 Apps %s (%.2f×)", jobs, took[1], took[5], speedup)
	if speedup < 4.5 {
		t.Fatalf("5 Apps registered %d runners %.2f× as fast as one; want ≥ 4.5×", jobs, speedup)
	}
}

// An App not installed on the owner, and an App GitHub refused, hand the
// call to the others: nothing is lost, and nothing reaches GitHub through
// the refused App during its penalty.
func TestAnAppThatCannotCallHandsTheCallToAnother(t *testing.T) {
	clock := &testclock.Clock{}             // App JWTs are signed on real time
	srv, g, clients := apps(t, clock, 3, 2) // App 102 is not installed on the org
	ctx := context.Background()
	register := func(i int) {
		t.Helper()
		for {
			_, err := g.GenerateJITConfig(ctx, github.JITRequest{Owner: owner, Name: fmt.Sprintf("runfleet-a-%d", i), Labels: []string{"self-hosted"}})
			var paced *github.RateLimitError
			if errors.As(err, &paced) && paced.Paced {
				clock.AdvanceTo(paced.RetryAt) // runfleet's own pacing: come back then
				continue
			}
			if err != nil {
				t.Fatalf("runner %d: %v", i, err)
			}
			return
		}
	}
	register(0)
	srv.Inject(githubtest.RouteOrgJITConfig, githubtest.SecondaryRateLimit(time.Hour).Times(1))
	for i := 1; i <= 20; i++ {
		register(i)
	}
	refused := -1
	for i, c := range clients {
		if s := c.Budgets()[fmt.Sprintf("installation:%d", 900+i)]; s.Refusals == 1 {
			refused = i
		}
	}
	if refused < 0 {
		t.Fatal("no App was refused")
	}
	// Through the other installed App, every runner, including the one
	// whose call was refused, and the refused App's runner removed.
	if got := len(srv.Runners()); got != 21 {
		t.Fatalf("%d runners registered, want 21", got)
	}
	for _, r := range srv.Runners() {
		for {
			err := g.RemoveRunner(ctx, github.RunnerRef{Owner: owner, ID: r.ID, Name: r.Name})
			var paced *github.RateLimitError
			if errors.As(err, &paced) && paced.Paced {
				clock.AdvanceTo(paced.RetryAt)
				continue
			}
			if err != nil {
				t.Fatalf("remove %s: %v", r.Name, err)
			}
			break
		}
	}
	if got := len(srv.Runners()); got != 0 {
		t.Fatalf("%d runners left", got)
	}
	// After its refusal, nothing went to GitHub through the refused App.
	id := fmt.Sprintf("installation:%d", 900+refused)
	seen := false
	for _, call := range srv.Calls() {
		if call.Identity != id {
			continue
		}
		if seen {
			t.Fatalf("a call went through the refused App during its penalty: %+v", call)
		}
		seen = call.Status == 403 || call.Status == 429
	}
}

// A scale-set client's registration token comes through an App installed
// on the owner; one that is not hands the call to another.
func TestRegistrationTokenThroughAnInstalledApp(t *testing.T) {
	clock := &testclock.Clock{}
	srv, g, _ := apps(t, clock, 2, 0) // App 100 is not installed on the org
	for {
		tok, err := g.RegistrationToken(context.Background(), owner)
		var paced *github.RateLimitError
		if errors.As(err, &paced) && paced.Paced {
			clock.AdvanceTo(paced.RetryAt)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		minted := srv.RegistrationTokens()
		if len(minted) != 1 || minted[0].Token != tok.Token {
			t.Fatalf("token %q, the fake minted %v", tok.Token, minted)
		}
		return
	}
}
