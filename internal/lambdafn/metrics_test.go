package lambdafn_test

import (
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/lambdafn/work"
	"github.com/runfleet/runfleet/internal/runner"
)

// emfValues returns the values of metric in the EMF lines whose dimension
// members match dims, checking each such line declares the metric under
// namespace runfleet with exactly those dimensions (ControllerId first).
func (s *stack) emfValues(t *testing.T, metric string, dims map[string]any) []float64 {
	t.Helper()
	var out []float64
	for _, line := range s.metrics.Lines(t, dims) {
		v, ok := line[metric].(float64)
		if !ok {
			continue
		}
		directive := line["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
		if directive["Namespace"] != "runfleet" {
			t.Errorf("%s in namespace %v, want runfleet", metric, directive["Namespace"])
		}
		set := directive["Dimensions"].([]any)[0].([]any)
		if len(set) != len(dims) || set[0] != "ControllerId" {
			t.Errorf("%s dimensions %v, want ControllerId and %v", metric, set, dims)
		}
		out = append(out, v)
	}
	return out
}

// With the real GitHub client (against a fake GitHub), the worker reports
// the calls its invocation made by operation and the remaining rate limit;
// the reconciler reports its own calls and the live set by pool and status.
func TestWorkerAndReconcilerPublishEMFMetrics(t *testing.T) {
	const pat = "ghp_metricstest"
	srv := githubtest.NewServer(t, githubtest.WithToken(pat), githubtest.WithRateLimit(1000))
	srv.AddOrg("octo-org")
	client, err := rest.New(rest.Options{BaseURL: srv.URL(), Token: pat})
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t, stackOptions{github: client})
	intake, worker, reconciler := s.webhook(), s.worker(), s.reconciler()

	name := s.queue(t, intake, 7000002001, "x64")
	s.drain(t, worker, 10*time.Second, name+" running", s.hasStatus(name, runner.StatusRunning))

	ctl := map[string]any{"ControllerId": "lambda-test", "Operation": rest.OpGenerateJITConfig}
	if got := s.emfValues(t, work.MetricGitHubAPICalls, ctl); len(got) != 1 || got[0] != 1 {
		t.Fatalf("worker GitHubAPICalls{GenerateJITConfig} = %v, want one invocation with 1 call", got)
	}
	remaining := s.emfValues(t, work.MetricGitHubRateLimitRemaining, map[string]any{"ControllerId": "lambda-test", "Installation": "0"})
	if len(remaining) == 0 || remaining[len(remaining)-1] >= 1000 || remaining[len(remaining)-1] < 900 {
		t.Fatalf("GitHubRateLimitRemaining{Installation=0} = %v, want the fake's budget after a few calls (limit 1000)", remaining)
	}
	if used := srv.APICallCount(); float64(1000-used) != remaining[len(remaining)-1] {
		t.Errorf("last reported remaining %v, fake GitHub says %d calls were made of 1000", remaining[len(remaining)-1], used)
	}

	s.metrics.Reset()
	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	ctx, _ := s.invocation()
	if _, err := reconciler(ctx, tick); err != nil {
		t.Fatal(err)
	}
	live := s.emfValues(t, work.MetricLiveInstances, map[string]any{"ControllerId": "lambda-test", "Pool": linuxPool, "Status": "running"})
	if len(live) != 1 || live[0] != 1 {
		t.Fatalf("LiveInstances{linux-x64, running} = %v, want 1", live)
	}
	if got := s.emfValues(t, work.MetricGitHubAPICalls, map[string]any{"ControllerId": "lambda-test", "Operation": rest.OpListRunners}); len(got) != 1 || got[0] < 1 {
		t.Fatalf("reconciler GitHubAPICalls{ListRunners} = %v, want the pass's runner listing", got)
	}
	if got := s.emfValues(t, work.MetricGitHubAPICalls, ctl); len(got) != 0 {
		t.Fatalf("reconciler reported GenerateJITConfig calls %v: the worker's calls were counted again", got)
	}
}

// The simulated GitHub reports nothing about itself: no GitHub metric is
// published, the live set still is.
func TestSimulatedGitHubPublishesNoGitHubMetrics(t *testing.T) {
	s := newStack(t, stackOptions{})
	intake, worker, reconciler := s.webhook(), s.worker(), s.reconciler()
	name := s.queue(t, intake, 7000002002, "x64")
	s.drain(t, worker, 10*time.Second, name+" running", s.hasStatus(name, runner.StatusRunning))
	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	ctx, _ := s.invocation()
	if _, err := reconciler(ctx, tick); err != nil {
		t.Fatal(err)
	}
	for _, line := range s.metrics.Lines(t, nil) {
		if _, ok := line[work.MetricGitHubAPICalls]; ok {
			t.Errorf("GitHub metric published with the simulated GitHub: %v", line)
		}
		if _, ok := line[work.MetricGitHubRateLimitRemaining]; ok {
			t.Errorf("GitHub metric published with the simulated GitHub: %v", line)
		}
	}
	if live := s.emfValues(t, work.MetricLiveInstances, map[string]any{"ControllerId": "lambda-test", "Pool": linuxPool, "Status": "running"}); len(live) != 1 || live[0] != 1 {
		t.Fatalf("LiveInstances{linux-x64, running} = %v, want 1", live)
	}
}
