package simulated_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/testclock"
)

var (
	org  = github.Owner{Org: "octo-org", InstallationID: 1}
	repo = github.Owner{Org: "octo-org", Repo: "app"}
	ent  = github.Owner{Enterprise: "acme"}
)

func jit(owner github.Owner, name string) github.JITRequest {
	return github.JITRequest{Owner: owner, Name: name, Labels: []string{"self-hosted", "linux"}}
}

func register(t *testing.T, g *simulated.GitHub, owner github.Owner, name string) *github.JITConfig {
	t.Helper()
	cfg, err := g.GenerateJITConfig(context.Background(), jit(owner, name))
	if err != nil {
		t.Fatalf("register %s: %v", name, err)
	}
	return cfg
}

func TestGenerateJITConfigRegistersRunners(t *testing.T) {
	ctx := context.Background()
	g := simulated.New()
	a := register(t, g, org, "runfleet-a")
	b := register(t, g, org, "runfleet-b")
	c := register(t, g, repo, "runfleet-a") // same name, other owner
	if a.RunnerID == b.RunnerID || b.RunnerID == c.RunnerID || a.RunnerID == 0 {
		t.Errorf("ids not unique: %d %d %d", a.RunnerID, b.RunnerID, c.RunnerID)
	}
	checkJITShape(t, a, "runfleet-a")
	if a.EncodedJITConfig == b.EncodedJITConfig {
		t.Error("two runners got the same JIT configuration")
	}

	runners, err := g.ListRunners(ctx, github.Owner{Org: "OCTO-ORG"})
	if err != nil || len(runners) != 2 {
		t.Fatalf("org runners %+v, %v", runners, err)
	}
	if r := runners[0]; r.ID != a.RunnerID || r.Name != "runfleet-a" || r.Status != simulated.StatusOffline || r.Busy || len(r.Labels) != 2 {
		t.Errorf("runner %+v", r)
	}
	if got, _ := g.ListRunners(ctx, repo); len(got) != 1 || got[0].ID != c.RunnerID {
		t.Errorf("repo runners %+v", got)
	}
	if got, _ := g.ListRunners(ctx, ent); len(got) != 0 {
		t.Errorf("enterprise runners %+v", got)
	}
	if all := g.Runners(); len(all) != 3 || all[2].Owner != repo {
		t.Errorf("snapshot %+v", all)
	}
}

// checkJITShape: GitHub's shape — base64 of a JSON object of exactly the
// runner's three files, each base64 — with the runner's id and name in
// .runner.
func checkJITShape(t *testing.T, cfg *github.JITConfig, name string) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(cfg.EncodedJITConfig)
	if err != nil {
		t.Fatalf("encoded config is not base64: %v", err)
	}
	var doc map[string]string
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("encoded config is not a JSON object of strings: %v", err)
	}
	if len(doc) != 3 {
		t.Errorf("files %v, want .runner, .credentials, .credentials_rsaparams", keys(doc))
	}
	files := map[string]map[string]any{}
	for _, f := range []string{".runner", ".credentials", ".credentials_rsaparams"} {
		content, err := base64.StdEncoding.DecodeString(doc[f])
		var parsed map[string]any
		if err != nil || json.Unmarshal(content, &parsed) != nil {
			t.Fatalf("%s is not base64 of a JSON object: %q, %v", f, content, err)
		}
		files[f] = parsed
	}
	if r := files[".runner"]; r["agentId"] != float64(cfg.RunnerID) || r["agentName"] != name || r["ephemeral"] != true {
		t.Errorf(".runner %v, want agentId %d and agentName %s", r, cfg.RunnerID, name)
	}
	if c := files[".credentials"]; c["scheme"] != "OAuth" {
		t.Errorf(".credentials %v", c)
	}
	if p := files[".credentials_rsaparams"]; p["exponent"] != "AQAB" || p["modulus"] == "" {
		t.Errorf(".credentials_rsaparams %v", p)
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestNameTakenIsTheEnginesError(t *testing.T) {
	g := simulated.New()
	register(t, g, org, "runfleet-a")
	_, err := g.GenerateJITConfig(context.Background(), jit(org, "RUNFLEET-A"))
	if !errors.Is(err, github.ErrRunnerNameTaken) {
		t.Fatalf("got %v", err)
	}
	if len(g.Runners()) != 1 {
		t.Error("a second runner was registered")
	}
}

func TestGenerateJITConfigValidates(t *testing.T) {
	g := simulated.New()
	bad := []github.JITRequest{
		{Owner: org, Labels: []string{"x"}},
		{Owner: github.Owner{}, Name: "a", Labels: []string{"x"}},
		{Owner: org, Name: "a"},
		{Owner: org, Name: "a", Labels: make([]string, 101)},
	}
	for _, req := range bad {
		if _, err := g.GenerateJITConfig(context.Background(), req); err == nil {
			t.Errorf("%+v accepted", req)
		}
	}
	if len(g.Runners()) != 0 {
		t.Error("invalid requests registered runners")
	}
}

func TestRemoveRunner(t *testing.T) {
	ctx := context.Background()
	g := simulated.New()
	a := register(t, g, org, "a")
	register(t, g, org, "b")
	c := register(t, g, repo, "c")

	if err := g.RemoveRunner(ctx, github.RunnerRef{Owner: org, ID: a.RunnerID}); err != nil {
		t.Fatal(err)
	}
	if err := g.RemoveRunner(ctx, github.RunnerRef{Owner: org, Name: "B"}); err != nil {
		t.Fatal(err)
	}
	// Not found is success: by id, by name, and at the wrong owner.
	for _, ref := range []github.RunnerRef{
		{Owner: org, ID: a.RunnerID},
		{Owner: org, Name: "nobody"},
		{Owner: org, ID: c.RunnerID},
	} {
		if err := g.RemoveRunner(ctx, ref); err != nil {
			t.Errorf("%+v: %v", ref, err)
		}
	}
	if all := g.Runners(); len(all) != 1 || all[0].ID != c.RunnerID {
		t.Errorf("left %+v (the wrong-owner remove must not touch c)", all)
	}
	if err := g.RemoveRunner(ctx, github.RunnerRef{Owner: org}); err == nil {
		t.Error("a ref with neither id nor name accepted")
	}
}

func TestBusyRunnerIsNotRemoved(t *testing.T) {
	ctx := context.Background()
	g := simulated.New()
	a := register(t, g, org, "a")
	if !g.SetBusy("a", true) {
		t.Fatal("SetBusy did not find the runner")
	}
	if g.SetBusy("nobody", true) {
		t.Error("SetBusy found a missing runner")
	}
	err := g.RemoveRunner(ctx, github.RunnerRef{Owner: org, ID: a.RunnerID})
	if !errors.Is(err, github.ErrRunnerBusy) {
		t.Fatalf("got %v", err)
	}
	r := g.Runners()[0]
	if !r.Busy || r.Status != simulated.StatusOnline {
		t.Errorf("busy runner %+v", r)
	}
	g.SetBusy("a", false)
	if err := g.RemoveRunner(ctx, github.RunnerRef{Owner: org, Name: "a"}); err != nil {
		t.Fatal(err)
	}
}

func TestOnlineAndDeregister(t *testing.T) {
	g := simulated.New()
	register(t, g, org, "a")
	g.SetOnline("a", true)
	if r := g.Runners()[0]; r.Status != simulated.StatusOnline {
		t.Errorf("%+v", r)
	}
	g.SetBusy("a", true)
	g.SetOnline("a", false)
	if r := g.Runners()[0]; r.Status != simulated.StatusOffline || r.Busy {
		t.Errorf("offline runner %+v", r)
	}
	if !g.Deregister("A") || len(g.Runners()) != 0 {
		t.Error("Deregister did not remove the runner")
	}
	if g.Deregister("a") {
		t.Error("Deregister found a removed runner")
	}
}

func TestFailNext(t *testing.T) {
	ctx := context.Background()
	g := simulated.New()
	boom := errors.New("boom")
	perm := &github.PermissionError{Op: "jit", Message: "no"}
	g.FailNext(simulated.OpGenerateJITConfig, boom)
	g.FailNext(simulated.OpGenerateJITConfig, perm)
	if _, err := g.GenerateJITConfig(ctx, jit(org, "a")); !errors.Is(err, boom) {
		t.Errorf("first: %v", err)
	}
	var pe *github.PermissionError
	if _, err := g.GenerateJITConfig(ctx, jit(org, "a")); !errors.As(err, &pe) {
		t.Errorf("second: %v", err)
	}
	if len(g.Runners()) != 0 {
		t.Error("failed calls took effect")
	}
	register(t, g, org, "a") // the queue is drained

	g.FailNext(simulated.OpRemoveRunner, boom)
	if err := g.RemoveRunner(ctx, github.RunnerRef{Owner: org, Name: "a"}); !errors.Is(err, boom) {
		t.Errorf("remove: %v", err)
	}
	g.FailNext(simulated.OpListRunners, boom)
	if _, err := g.ListRunners(ctx, org); !errors.Is(err, boom) {
		t.Errorf("list: %v", err)
	}
	if len(g.Runners()) != 1 {
		t.Error("a failed remove took effect")
	}
}

func TestFailNextAfterEffect(t *testing.T) {
	ctx := context.Background()
	g := simulated.New()
	boom := errors.New("502")
	g.FailNextAfterEffect(simulated.OpGenerateJITConfig, boom)
	if _, err := g.GenerateJITConfig(ctx, jit(org, "a")); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	// GitHub created the runner anyway: the retry meets the name.
	if _, err := g.GenerateJITConfig(ctx, jit(org, "a")); !errors.Is(err, github.ErrRunnerNameTaken) {
		t.Errorf("retry: %v", err)
	}
	g.FailNextAfterEffect(simulated.OpRemoveRunner, boom)
	if err := g.RemoveRunner(ctx, github.RunnerRef{Owner: org, Name: "a"}); !errors.Is(err, boom) {
		t.Errorf("remove: %v", err)
	}
	if len(g.Runners()) != 0 {
		t.Error("the remove did not take effect")
	}
}

func TestRateLimit(t *testing.T) {
	ctx := context.Background()
	g := simulated.New()
	clock := testclock.At(time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC))
	g.SetNow(clock.Now)
	until := clock.Now().Add(time.Minute)
	g.RateLimit(until)

	var rl *github.RateLimitError
	if _, err := g.GenerateJITConfig(ctx, jit(org, "a")); !errors.As(err, &rl) || !rl.RetryAt.Equal(until) {
		t.Errorf("jit: %v", err)
	}
	if err := g.RemoveRunner(ctx, github.RunnerRef{Owner: org, Name: "a"}); !errors.As(err, &rl) {
		t.Errorf("remove: %v", err)
	}
	if _, err := g.ListRunners(ctx, org); !errors.As(err, &rl) {
		t.Errorf("list: %v", err)
	}
	if len(g.Runners()) != 0 {
		t.Error("a rate-limited call took effect")
	}
	clock.AdvanceTo(until) // the limit resets at RetryAt
	register(t, g, org, "a")
	g.RateLimit(clock.Now().Add(time.Hour))
	g.RateLimit(time.Time{})
	register(t, g, org, "b")
}

func TestCallCounters(t *testing.T) {
	ctx := context.Background()
	g := simulated.New()
	register(t, g, org, "a")
	_, _ = g.GenerateJITConfig(ctx, jit(org, "a")) // 409, still a call
	_ = g.RemoveRunner(ctx, github.RunnerRef{Owner: org, Name: "a"})
	_, _ = g.ListRunners(ctx, org)
	_, _ = g.ListRunners(ctx, org)
	g.FailNext(simulated.OpListRunners, errors.New("x"))
	_, _ = g.ListRunners(ctx, org)

	if g.Calls(simulated.OpGenerateJITConfig) != 2 || g.Calls(simulated.OpRemoveRunner) != 1 || g.Calls(simulated.OpListRunners) != 3 {
		t.Errorf("calls jit=%d remove=%d list=%d", g.Calls(simulated.OpGenerateJITConfig), g.Calls(simulated.OpRemoveRunner), g.Calls(simulated.OpListRunners))
	}
	if g.TotalCalls() != 6 {
		t.Errorf("total %d", g.TotalCalls())
	}
	// A cancelled context never reaches GitHub.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := g.ListRunners(cancelled, org); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if g.TotalCalls() != 6 {
		t.Error("a cancelled call was counted")
	}
	g.ResetCalls()
	if g.TotalCalls() != 0 {
		t.Error("ResetCalls kept counts")
	}
}

func TestSnapshotsAreCopies(t *testing.T) {
	g := simulated.New()
	register(t, g, org, "a")
	g.Runners()[0].Labels[0] = "changed"
	list, _ := g.ListRunners(context.Background(), org)
	list[0].Labels[1] = "changed"
	if r := g.Runners()[0]; r.Labels[0] != "self-hosted" || r.Labels[1] != "linux" {
		t.Errorf("caller changed the simulation: %+v", r)
	}
}

func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	g := simulated.New()
	var wg sync.WaitGroup
	ids := make(chan int64, 400)
	for w := range 8 {
		wg.Go(func() {
			for i := range 50 {
				name := fmt.Sprintf("w%d-%d", w, i)
				cfg, err := g.GenerateJITConfig(ctx, jit(org, name))
				if err != nil {
					t.Error(err)
					return
				}
				ids <- cfg.RunnerID
				g.SetBusy(name, i%2 == 0)
				_, _ = g.ListRunners(ctx, org)
				_ = g.RemoveRunner(ctx, github.RunnerRef{Owner: org, ID: cfg.RunnerID})
			}
		})
	}
	wg.Wait()
	close(ids)
	seen := map[int64]bool{}
	for id := range ids {
		if seen[id] {
			t.Fatalf("id %d issued twice", id)
		}
		seen[id] = true
	}
	if len(seen) != 400 || len(g.Runners()) != 200 {
		t.Errorf("%d ids, %d runners left (the busy half)", len(seen), len(g.Runners()))
	}
}
