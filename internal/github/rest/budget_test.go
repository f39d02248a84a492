package rest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/testclock"
)

// pacedClient is the App client on a clock whose waits are instant: the
// fake GitHub and the budget read the same time.
func pacedClient(t *testing.T, srv *githubtest.Server, clock *testclock.Clock) *rest.Client {
	t.Helper()
	c, err := rest.New(rest.Options{BaseURL: srv.GHESURL(), AppID: testAppID, PrivateKey: appKey().PrivateKeyPEM,
		InstallationID: testInstallationID, Now: clock.Now, Sleep: clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A burst of 300 JIT configs (1,500 points, over a minute and a half of
// GitHub's 900 points/min) against a GitHub that enforces its secondary
// limits: the budget spreads them and GitHub refuses none.
func TestBurstOfJITConfigsIsNeverRefused(t *testing.T) {
	clock := &testclock.Clock{}
	srv := fakeGitHub(t, githubtest.WithClock(clock.Now), githubtest.WithSecondaryLimits(githubtest.SecondaryLimits{}))
	c := pacedClient(t, srv, clock)
	start := clock.Now()
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for i := range 100 {
				if _, err := c.GenerateJITConfig(context.Background(), jitFor(orgOwner, fmt.Sprintf("runfleet-b-%d-%d", w, i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := srv.SecondaryRefusals(); n != 0 {
		t.Errorf("GitHub refused %d calls", n)
	}
	if got := srv.CallCount(githubtest.RouteOrgJITConfig); got != 300 {
		t.Errorf("%d JIT calls reached GitHub, want 300", got)
	}
	if took := clock.Now().Sub(start); took < 90*time.Second {
		t.Errorf("1,500 points went in %s: faster than GitHub allows", took)
	}
	stats := c.Budgets()["installation:777"]
	if stats.Waits == 0 || stats.WaitSeconds <= 0 || stats.Refusals != 0 {
		t.Errorf("installation budget %+v: want waits and no refusals", stats)
	}
}

// Once GitHub refuses, nothing reaches it until its retry-after has passed:
// not the refused operation, not another, not a GET.
func TestNothingReachesGitHubDuringItsPenalty(t *testing.T) {
	clock := &testclock.Clock{}
	srv := fakeGitHub(t, githubtest.WithClock(clock.Now))
	c := pacedClient(t, srv, clock)
	ctx := context.Background()
	if _, err := c.ListRunners(ctx, orgOwner); err != nil { // mints the token
		t.Fatal(err)
	}
	srv.Inject(githubtest.RouteOrgJITConfig, githubtest.SecondaryRateLimit(time.Minute).Times(1))
	_, err := c.GenerateJITConfig(ctx, jitFor(orgOwner, "runfleet-p-1"))
	var rl *github.RateLimitError
	if !errors.As(err, &rl) || !rl.Secondary || rl.Paced {
		t.Fatalf("refused JIT: %v, want a secondary rate limit", err)
	}
	reached := srv.CallCount("*")
	for _, d := range []time.Duration{0, 30 * time.Second, 29 * time.Second} {
		clock.Advance(d)
		_, err1 := c.GenerateJITConfig(ctx, jitFor(orgOwner, "runfleet-p-2"))
		_, err2 := c.ListRunners(ctx, orgOwner)
		for _, err := range []error{err1, err2} {
			var held *github.RateLimitError
			if !errors.As(err, &held) || !held.RetryAt.Equal(rl.RetryAt) {
				t.Fatalf("%s into the penalty: %v, want held until %s", d, err, rl.RetryAt)
			}
		}
	}
	if n := srv.CallCount("*"); n != reached {
		t.Fatalf("%d calls reached GitHub during its penalty", n-reached)
	}
	// After it, the budget lets calls go. (go-github keeps its own guard
	// until the retry-after on the real clock, which this test does not
	// move: ask the budget rather than send.)
	clock.Advance(rl.RetryAt.Sub(clock.Now()) + time.Second)
	if at, err := c.ReadyAt(ctx, orgOwner, "POST"); err != nil || at.After(clock.Now()) {
		t.Fatalf("after the penalty a JIT config goes at %s (%v), want now", at, err)
	}
	// The held calls were stopped by the budget or, first, by go-github's
	// own guard; either way none was sent.
	if s := c.Budgets()["installation:777"]; s.Refusals != 1 {
		t.Errorf("budget stats %+v, want 1 refusal", s)
	}
}

// The fake's model, seen by a client without pacing: past 900 points in a
// minute GitHub refuses, and every call during the penalty extends it.
func TestFakeGitHubRefusesPastItsSecondaryLimit(t *testing.T) {
	clock := &testclock.Clock{}
	srv := fakeGitHub(t, githubtest.WithClock(clock.Now), githubtest.WithSecondaryLimits(githubtest.SecondaryLimits{PointsPerMinute: 20}))
	c := pacedClient(t, srv, clock)
	ctx := context.Background()
	var refused error
	for i := range 10 {
		if _, err := c.GenerateJITConfig(ctx, jitFor(orgOwner, fmt.Sprintf("runfleet-f-%d", i))); err != nil {
			refused = err
			break
		}
	}
	var rl *github.RateLimitError
	if !errors.As(refused, &rl) || !rl.Secondary {
		t.Fatalf("past 20 points: %v, want GitHub's secondary limit", refused)
	}
	if srv.SecondaryRefusals() != 1 {
		t.Errorf("refusals %d, want 1", srv.SecondaryRefusals())
	}
}
