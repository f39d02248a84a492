package engine_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/providers"
)

func hasBuild(tools []providers.RunnerDownload, os, arch string) bool {
	for _, tool := range tools {
		if tool.OS == os && tool.Architecture == arch && tool.DownloadURL != "" && tool.Filename != "" {
			return true
		}
	}
	return false
}

// toolsWorld is a world on a movable clock with two workers running.
func toolsWorld(t *testing.T, clock *testclock.Clock) *enginetest.World {
	w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now})
	w.StartWorkers(2)
	return w
}

// toolsSent are the runner downloads the create request for name carried.
func toolsSent(t *testing.T, w *enginetest.World, name string) []providers.RunnerDownload {
	t.Helper()
	reqs := w.Recorder.Requests(name)
	if len(reqs) == 0 {
		t.Fatalf("no create request for %s", name)
	}
	return reqs[len(reqs)-1].RunnerDownloads
}

// The runner downloads reach every create, at the cost of one GitHub call
// per owner and hour: the GitHub calls per job stay JIT + remove.
func TestCreatesCarryRunnerDownloadsListedOncePerOwnerAndHour(t *testing.T) {
	clock := &testclock.Clock{}
	w := toolsWorld(t, clock)
	for id := int64(96_001); id <= 96_003; id++ {
		name := w.RunJob(id)
		if tools := toolsSent(t, w, name); !hasBuild(tools, "linux", "x64") || !hasBuild(tools, "win", "x64") {
			t.Fatalf("%s: create carried tools %+v, want GitHub's list", name, tools)
		}
	}
	if got := w.GitHub.Calls(ghsim.OpRunnerDownloads); got != 1 {
		t.Fatalf("downloads listed %d times for 3 creates, want 1 (cached)", got)
	}

	clock.Advance(time.Hour + time.Minute)
	name := w.RunJob(96_004)
	if got := w.GitHub.Calls(ghsim.OpRunnerDownloads); got != 2 {
		t.Fatalf("downloads listed %d times after the hour, want 2 (expired)", got)
	}
	if !hasBuild(toolsSent(t, w, name), "linux", "arm64") {
		t.Error("the create after the refresh carried no tools")
	}
}

// GitHub refusing the listing never fails a create: the machine gets no
// tools, a warning says why, and GitHub is not asked again for a while.
func TestFailedDownloadsListingStillCreatesWithoutTools(t *testing.T) {
	clock := &testclock.Clock{}
	w := toolsWorld(t, clock)
	w.GitHub.FailNext(ghsim.OpRunnerDownloads, &github.PermissionError{Op: "list runner downloads", Message: "Resource not accessible by integration"})

	first := w.RunJob(97_001)
	if tools := toolsSent(t, w, first); len(tools) != 0 {
		t.Fatalf("tools %+v after a failed listing, want none", tools)
	}
	if inst := w.Instance(first); inst.CreateAttempt != 1 || inst.ProviderFault != "" {
		t.Errorf("the failed listing touched the create: %+v", inst)
	}
	warned := false
	for _, l := range w.Logs.Lines(t, nil) {
		if l["level"] == "WARN" && strings.Contains(l["msg"].(string), "runner downloads") {
			warned = l["instance"] == first && strings.Contains(l["error"].(string), "not accessible")
		}
	}
	if !warned {
		t.Errorf("no warning naming the instance and GitHub's refusal:\n%s", w.Logs.Tail(20))
	}

	second := w.RunJob(97_002)
	if got := w.GitHub.Calls(ghsim.OpRunnerDownloads); got != 1 || len(toolsSent(t, w, second)) != 0 {
		t.Fatalf("right after a failure: %d listings, tools %+v; want 1 and none (not one call per job)", got, toolsSent(t, w, second))
	}

	clock.Advance(6 * time.Minute)
	third := w.RunJob(97_003)
	if got := w.GitHub.Calls(ghsim.OpRunnerDownloads); got != 2 || !hasBuild(toolsSent(t, w, third), "linux", "x64") {
		t.Fatalf("after the retry interval: %d listings, tools %+v; want 2 and GitHub's list", got, toolsSent(t, w, third))
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
	slow := &slowDownloads{release: make(chan struct{})}
	w := enginetest.NewWorld(t, enginetest.Options{GitHub: func(*slog.Logger) github.GitHub {
		slow.GitHub = ghsim.New()
		return slow
	}})
	w.StartWorkers(jobs)
	for i := range int64(jobs) {
		w.Deliver(enginetest.Event(runner.ActionQueued, 98_001+i, ""))
	}
	w.WaitFor("every create to be under way", func() bool {
		creating := 0
		for _, inst := range w.Live() {
			if inst.Status == runner.StatusCreating {
				creating++
			}
		}
		return creating == jobs
	})
	time.Sleep(50 * time.Millisecond) // room for a second listing that must not start
	close(slow.release)
	for i := range int64(jobs) {
		name := enginetest.InstanceName(98_001 + i)
		w.WaitStatus(name, runner.StatusRunning)
		if !hasBuild(toolsSent(t, w, name), "linux", "x64") {
			t.Errorf("%s got no tools", name)
		}
	}
	slow.mu.Lock()
	defer slow.mu.Unlock()
	if slow.calls != 1 {
		t.Fatalf("%d listings for %d concurrent creates, want 1", slow.calls, jobs)
	}
}
