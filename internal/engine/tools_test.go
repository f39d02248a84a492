package engine_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/events"
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
)

// toolsRecorder keeps the tools each create request carried.
type toolsRecorder struct {
	providers.Provider
	mu    sync.Mutex
	tools map[string][]providers.RunnerTool
}

func (p *toolsRecorder) CreateInstance(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	p.mu.Lock()
	if p.tools == nil {
		p.tools = map[string][]providers.RunnerTool{}
	}
	p.tools[req.Name] = req.Tools
	p.mu.Unlock()
	return p.Provider.CreateInstance(ctx, req)
}

func (p *toolsRecorder) sent(t *testing.T, name string) []providers.RunnerTool {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	tools, ok := p.tools[name]
	if !ok {
		t.Fatalf("no create request for %s", name)
	}
	return tools
}

func hasBuild(tools []providers.RunnerTool, os, arch string) bool {
	for _, tool := range tools {
		if tool.OS == os && tool.Architecture == arch && tool.DownloadURL != "" && tool.Filename != "" {
			return true
		}
	}
	return false
}

func toolsHarness(t *testing.T, clock *movableClock) (*harness, *toolsRecorder) {
	rec := &toolsRecorder{}
	h := newHarness(t, harnessOptions{now: clock.now, wrap: func(p providers.Provider) providers.Provider { rec.Provider = p; return rec }})
	h.startWorkers(2)
	return h, rec
}

// runJob takes a job to a running instance and returns its name.
func runJob(h *harness, id int64) string {
	h.deliver(job(events.ActionQueued, id, ""))
	name := nameFor(id)
	h.waitStatus(name, runner.StatusRunning)
	return name
}

// The runner downloads reach every create, at the cost of one GitHub call
// per owner and hour: the GitHub calls per job stay JIT + remove.
func TestCreatesCarryRunnerDownloadsListedOncePerOwnerAndHour(t *testing.T) {
	clock := &movableClock{}
	h, rec := toolsHarness(t, clock)
	for id := int64(96_001); id <= 96_003; id++ {
		name := runJob(h, id)
		if tools := rec.sent(t, name); !hasBuild(tools, "linux", "x64") || !hasBuild(tools, "win", "x64") {
			t.Fatalf("%s: create carried tools %+v, want GitHub's list", name, tools)
		}
	}
	if got := h.github.Calls(ghsim.OpRunnerDownloads); got != 1 {
		t.Fatalf("downloads listed %d times for 3 creates, want 1 (cached)", got)
	}

	clock.advance(time.Hour + time.Minute)
	name := runJob(h, 96_004)
	if got := h.github.Calls(ghsim.OpRunnerDownloads); got != 2 {
		t.Fatalf("downloads listed %d times after the hour, want 2 (expired)", got)
	}
	if !hasBuild(rec.sent(t, name), "linux", "arm64") {
		t.Error("the create after the refresh carried no tools")
	}
}

// GitHub refusing the listing never fails a create: the machine gets no
// tools, a warning says why, and GitHub is not asked again for a while.
func TestFailedDownloadsListingStillCreatesWithoutTools(t *testing.T) {
	clock := &movableClock{}
	h, rec := toolsHarness(t, clock)
	h.github.FailNext(ghsim.OpRunnerDownloads, &github.PermissionError{Op: "list runner downloads", Message: "Resource not accessible by integration"})

	first := runJob(h, 97_001)
	if tools := rec.sent(t, first); len(tools) != 0 {
		t.Fatalf("tools %+v after a failed listing, want none", tools)
	}
	if inst := h.instance(first); inst.CreateAttempt != 1 || inst.ProviderFault != "" {
		t.Errorf("the failed listing touched the create: %+v", inst)
	}
	warned := false
	for _, l := range h.logs.Lines(t, nil) {
		if l["level"] == "WARN" && strings.Contains(l["msg"].(string), "runner downloads") {
			warned = l["instance"] == first && strings.Contains(l["error"].(string), "not accessible")
		}
	}
	if !warned {
		t.Errorf("no warning naming the instance and GitHub's refusal:\n%s", h.logs.Tail(20))
	}

	second := runJob(h, 97_002)
	if got := h.github.Calls(ghsim.OpRunnerDownloads); got != 1 || len(rec.sent(t, second)) != 0 {
		t.Fatalf("right after a failure: %d listings, tools %+v; want 1 and none (not one call per job)", got, rec.sent(t, second))
	}

	clock.advance(6 * time.Minute)
	third := runJob(h, 97_003)
	if got := h.github.Calls(ghsim.OpRunnerDownloads); got != 2 || !hasBuild(rec.sent(t, third), "linux", "x64") {
		t.Fatalf("after the retry interval: %d listings, tools %+v; want 2 and GitHub's list", got, rec.sent(t, third))
	}
}

// slowDownloads holds every listing until released, counting them.
type slowDownloads struct {
	github.GitHub
	release chan struct{}
	mu      sync.Mutex
	calls   int
}

func (g *slowDownloads) RunnerDownloads(ctx context.Context, owner github.Owner) ([]github.RunnerDownload, error) {
	g.mu.Lock()
	g.calls++
	g.mu.Unlock()
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.GitHub.RunnerDownloads(ctx, owner)
}

// Creates racing for one owner while its downloads are being listed wait
// for that one listing instead of each asking GitHub.
func TestConcurrentCreatesShareOneListing(t *testing.T) {
	const jobs = 6
	rec := &toolsRecorder{}
	h := newHarness(t, harnessOptions{wrap: func(p providers.Provider) providers.Provider { rec.Provider = p; return rec }})
	slow := &slowDownloads{GitHub: h.github, release: make(chan struct{})}
	e, err := engine.New(engine.Options{
		ControllerID: testController, Store: h.store, Queue: h.queue, GitHub: slow,
		Providers: map[string]providers.Provider{testPool: rec}, Pools: []config.Pool{h.pool},
		Logger: slog.New(slog.NewJSONHandler(h.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.engine = e
	h.startWorkers(jobs)
	for i := range int64(jobs) {
		h.deliver(job(events.ActionQueued, 98_001+i, ""))
	}
	h.waitFor("every create to be under way", func() bool {
		n, _ := h.store.ListLiveInstances(context.Background())
		creating := 0
		for _, inst := range n {
			if inst.Status == runner.StatusCreating {
				creating++
			}
		}
		return creating == jobs
	})
	time.Sleep(50 * time.Millisecond) // room for a second listing that must not start
	close(slow.release)
	for i := range int64(jobs) {
		name := nameFor(98_001 + i)
		h.waitStatus(name, runner.StatusRunning)
		if !hasBuild(rec.sent(t, name), "linux", "x64") {
			t.Errorf("%s got no tools", name)
		}
	}
	slow.mu.Lock()
	defer slow.mu.Unlock()
	if slow.calls != 1 {
		t.Fatalf("%d listings for %d concurrent creates, want 1", slow.calls, jobs)
	}
}
