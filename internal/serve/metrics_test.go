package serve_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/serve"
	"github.com/runfleet/runfleet/internal/webhook"
)

// scrape GETs url (with token as bearer, when set) and parses Prometheus'
// text format.
func scrape(t *testing.T, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d", url, resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("content type %q, want Prometheus text", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("GET %s is not Prometheus text: %v", url, err)
	}
	return families
}

// sample is the value of the series of family name with exactly labels: a
// counter's or gauge's value, a histogram's count.
func sample(families map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := families[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			if labels[l.GetName()] != l.GetValue() {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// Right after start every family of the vocabulary is on /metrics, and
// every series a configured pool can have is there at 0 — a dashboard or
// alarm never sees a series appear from nothing. The reconcile pass at
// start may already have counted itself and its provider listing; nothing
// else can have happened. The rate limit is the one exception: a budget is
// not 0 before GitHub answered, so its series comes with GitHub's first
// answer (TestMetricsCountGitHubCallsByResult), and the refused Apps'
// series are a real client's Apps (the simulated GitHub has none;
// TestRecorderShowsTheAppsGitHubRefuses). The listener families have
// series only for scale-set pools, which this config has none of
// (TestServeRunsAListenerPerScaleSetPool).
func TestMetricsEveryFamilyIsPresentAtZeroAfterStart(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, func(string) string { return baseConfig(dir, "{simulated: true}") })
	families := scrape(t, s.base+"/metrics", "")
	for _, f := range metrics.Families {
		switch f.Name {
		case metrics.GitHubRateLimitRemaining, metrics.GitHubAppRefused, metrics.ListenerPolls, metrics.ListenerSessionConflicts, metrics.ListenerLastPoll:
			continue
		}
		if families[f.Name] == nil {
			t.Errorf("family %s missing after start", f.Name)
		}
	}
	zero := func(name string, labels map[string]string) {
		t.Helper()
		if v, ok := sample(families, name, labels); !ok || v != 0 {
			t.Errorf("%s%v = %v (present %t), want present at 0", name, labels, v, ok)
		}
	}
	for _, stage := range engine.QueueStages {
		zero(metrics.JobQueueSeconds, map[string]string{"pool": "p", "stage": string(stage)})
	}
	for _, st := range runner.AllStatuses {
		zero(metrics.Instances, map[string]string{"pool": "p", "status": string(st)})
		zero(metrics.InstancesStuck, map[string]string{"pool": "p", "status": string(st)})
	}
	for _, age := range metrics.OpenJobAges {
		zero(metrics.OpenJobs, map[string]string{"pool": "p", "age": age})
	}
	zero(metrics.JobsWaitingForCapacity, map[string]string{"pool": "p"})
	for _, action := range metrics.WebhookActions {
		for _, result := range metrics.WebhookResults {
			zero(metrics.Webhooks, map[string]string{"event": "workflow_job", "action": action, "result": result})
		}
	}
	for _, op := range []string{"create", "delete", "start", "stop"} {
		for _, result := range metrics.ProviderResults {
			zero(metrics.ProviderOperations, map[string]string{"pool": "p", "op": op, "result": result})
		}
		zero(metrics.ProviderOperationDuration, map[string]string{"pool": "p", "op": op})
	}
	if _, ok := sample(families, metrics.ProviderOperations, map[string]string{"pool": "p", "op": "list", "result": "ok"}); !ok {
		t.Errorf("%s{list, ok} missing", metrics.ProviderOperations)
	}
	for _, result := range metrics.GitHubResults {
		zero(metrics.GitHubCalls, map[string]string{"operation": "GenerateJITConfig", "result": result})
	}
	zero(metrics.DeleteRetries, map[string]string{"pool": "p"})
	zero(metrics.DeadLetters, map[string]string{})
	for _, reason := range metrics.RefusalReasons {
		zero(metrics.JobsRefused, map[string]string{"pool": "p", "reason": reason})
	}
	for _, reason := range metrics.FailoverReasons {
		zero(metrics.CapacityFailovers, map[string]string{"pool": "p", "reason": reason})
	}
	zero(metrics.SpotInterruptions, map[string]string{"pool": "p"})
	zero(metrics.SpotBreakerOpen, map[string]string{"pool": "p"})
	zero(metrics.ReconcilePasses, map[string]string{"result": "error"})
	for _, action := range metrics.ReconcileActionNames {
		if _, ok := sample(families, metrics.ReconcileActions, map[string]string{"action": action}); !ok {
			t.Errorf("%s{%s} missing", metrics.ReconcileActions, action)
		}
	}
}

// The tour (README, examples/local.yaml, examples/payloads): a queued job
// is made a machine and then picked up. Its queue time is observed at
// "created" and at "started" (the simulated machines never call back, so
// "online" stays empty), and the deliveries and the provider's create are
// counted.
func TestMetricsQueueTimeObservesATourJob(t *testing.T) {
	yaml, err := os.ReadFile("../../examples/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s := startServe(t, func(string) string {
		return strings.Replace(string(yaml), "dir: ./runfleet-data", "dir: "+dir, 1)
	})
	send := func(file string) {
		t.Helper()
		body, err := os.ReadFile("../../examples/payloads/" + file)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := webhook.Send(context.Background(), s.base+"/webhook", []byte("secret"), webhook.EventWorkflowJob, body, ""); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %v %+v", file, err, res)
		}
	}
	const pool = "linux-x64"
	send("queued.json")
	// The worker observes "created" just after it records the machine.
	enginetest.Eventually(t, "the tour job's machine to be created and its wait observed", func() bool {
		families := scrape(t, s.base+"/metrics", "")
		running, _ := sample(families, metrics.Instances, map[string]string{"pool": pool, "status": "running"})
		created, _ := sample(families, metrics.JobQueueSeconds, map[string]string{"pool": pool, "stage": "created"})
		return running == 1 && created == 1
	})
	send("in_progress.json")

	families := scrape(t, s.base+"/metrics", "")
	for stage, want := range map[string]float64{"created": 1, "online": 0, "started": 1} {
		if got, _ := sample(families, metrics.JobQueueSeconds, map[string]string{"pool": pool, "stage": stage}); got != want {
			t.Errorf("%s{%s} count = %v, want %v", metrics.JobQueueSeconds, stage, got, want)
		}
	}
	for action, want := range map[string]float64{"queued": 1, "in_progress": 1} {
		if got, _ := sample(families, metrics.Webhooks, map[string]string{"event": "workflow_job", "action": action, "result": "accepted"}); got != want {
			t.Errorf("%s{%s, accepted} = %v, want %v", metrics.Webhooks, action, got, want)
		}
	}
	if got, _ := sample(families, metrics.ProviderOperations, map[string]string{"pool": pool, "op": "create", "result": "ok"}); got != 1 {
		t.Errorf("%s{create, ok} = %v, want 1", metrics.ProviderOperations, got)
	}
	// The job started, so no open demand is left.
	for _, age := range metrics.OpenJobAges {
		if got, _ := sample(families, metrics.OpenJobs, map[string]string{"pool": pool, "age": age}); got != 0 {
			t.Errorf("%s{%s} = %v after the job started, want 0", metrics.OpenJobs, age, got)
		}
	}
}

// Bad deliveries are counted by what was wrong with them, and changed
// nothing else.
func TestMetricsCountRejectedWebhooks(t *testing.T) {
	s := startServe(t, func(string) string { return baseConfig(t.TempDir(), "{simulated: true}") })
	if res, err := webhook.Send(context.Background(), s.base+"/webhook", []byte("wrong secret"), webhook.EventWorkflowJob, []byte(`{}`), ""); err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("forged delivery: %v %+v", err, res)
	}
	if res, err := webhook.Send(context.Background(), s.base+"/webhook", []byte("secret"), "push", []byte(`{}`), ""); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("push delivery: %v %+v", err, res)
	}
	families := scrape(t, s.base+"/metrics", "")
	for labels, want := range map[[3]string]float64{
		{"workflow_job", "none", "bad_signature"}: 1,
		{"other", "none", "ignored"}:              1,
		{"workflow_job", "queued", "accepted"}:    0,
	} {
		got, _ := sample(families, metrics.Webhooks, map[string]string{"event": labels[0], "action": labels[1], "result": labels[2]})
		if got != want {
			t.Errorf("%s%v = %v, want %v", metrics.Webhooks, labels, got, want)
		}
	}
	if got, _ := sample(families, metrics.Instances, map[string]string{"pool": "p", "status": "pending_create"}); got != 0 {
		t.Errorf("a rejected delivery made an instance")
	}
}

// With the real GitHub client, calls are counted by operation and result,
// and each installation's remaining budget appears with GitHub's first
// answer (the reconcile pass at start lists the runners).
func TestMetricsCountGitHubCallsByResult(t *testing.T) {
	srv := githubtest.NewServer(t, githubtest.WithToken("secret"), githubtest.WithRateLimit(500))
	srv.AddOrg("octo-org")
	dir := t.TempDir()
	s := startServe(t, func(string) string {
		return baseConfig(dir, fmt.Sprintf("{base_url: %q, token_env: GITHUB_TOKEN}", srv.URL()))
	})
	var families map[string]*dto.MetricFamily
	enginetest.Eventually(t, "the start pass's runner listing and its budget to be counted", func() bool {
		families = scrape(t, s.base+"/metrics", "")
		v, _ := sample(families, metrics.GitHubCalls, map[string]string{"operation": "ListRunners", "result": "ok"})
		_, budget := sample(families, metrics.GitHubRateLimitRemaining, map[string]string{"installation": "0"})
		return v >= 1 && budget
	})
	remaining, _ := sample(families, metrics.GitHubRateLimitRemaining, map[string]string{"installation": "0"})
	if remaining >= 500 || remaining < 400 {
		t.Errorf("%s{0} = %v, want the fake's budget after a few calls", metrics.GitHubRateLimitRemaining, remaining)
	}
	if got, _ := sample(families, metrics.GitHubCalls, map[string]string{"operation": "ListRunners", "result": "rate_limited"}); got != 0 {
		t.Errorf("%s{ListRunners, rate_limited} = %v, want 0", metrics.GitHubCalls, got)
	}
}

// server.metrics_address moves /metrics to a listener of its own, and
// server.metrics_token puts it behind a bearer token; the webhook's
// listener no longer serves it.
func TestMetricsOnTheirOwnAddressBehindAToken(t *testing.T) {
	main, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	side, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	yaml := baseConfig(t.TempDir(), "{simulated: true}") +
		fmt.Sprintf("server: {metrics_address: %q, metrics_token_env: METRICS_TOKEN}\n", side.Addr().String())
	cfg := parseConfig(t, yaml)
	if cfg.Server.MetricsToken != "secret" {
		t.Fatalf("metrics token not resolved: %q", cfg.Server.MetricsToken)
	}
	runServe(t, cfg, main, side)
	base, metricsURL := "http://"+main.Addr().String(), "http://"+side.Addr().String()+"/metrics"
	waitHealthy(t, base)

	if families := scrape(t, metricsURL, "secret"); families[metrics.Instances] == nil {
		t.Fatalf("no %s on the metrics address", metrics.Instances)
	}
	for token, want := range map[string]int{"": http.StatusUnauthorized, "wrong": http.StatusUnauthorized} {
		req, _ := http.NewRequest(http.MethodGet, metricsURL, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /metrics with token %q = %d, want %d", token, resp.StatusCode, want)
		}
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /metrics on server.listen = %d, want 404 once metrics_address is set", resp.StatusCode)
	}
}

func runServe(t *testing.T, cfg *config.Config, ln, metricsLn net.Listener) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.Options{Config: cfg, Listener: ln, MetricsListener: metricsLn, Logger: slog.New(slog.DiscardHandler)})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve.Run: %v", err)
		}
	})
}
