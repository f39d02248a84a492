package lambdafn_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/runner"
)

// One queued delivery in five fails at GitHub's side and is never resent:
// on Lambda too, the reconciler function reads the App's delivery log and
// every job gets exactly one runner within two passes.
func TestLostDeliveriesAreRecoveredOnLambda(t *testing.T) {
	const installation = 777
	key := githubtest.GenerateAppKey(t)
	srv := githubtest.NewServer(t, githubtest.WithApp(42, key.PublicKey), githubtest.WithInstallation(installation, "octo-org"),
		githubtest.WithFailedDeliveries(0.2, githubtest.DeliveryUnsent))
	srv.AddOrg("octo-org")
	client, err := rest.New(rest.Options{BaseURL: srv.GHESURL(), AppID: 42, PrivateKey: key.PrivateKeyPEM, InstallationID: installation})
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t, stackOptions{github: client, config: strings.Replace(testConfig, "  simulated: true\n",
		"  app: {id: 42, installation_id: 777, private_key_env: RUNFLEET_GITHUB_PRIVATE_KEY}\n", 1)})
	t.Setenv(lambdafn.EnvGitHubSecretARN, s.putSecret(t, string(key.PrivateKeyPEM)))
	intake, worker, reconciler := s.webhook(), s.worker(), s.reconciler()

	// The webhook function behind a URL, as its Function URL is.
	url := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ev := functionURLEvent(t, body)
		for _, h := range []string{"X-GitHub-Delivery", "X-Hub-Signature-256", "X-GitHub-Event"} {
			ev.Headers[strings.ToLower(h)] = r.Header.Get(h)
		}
		ctx, _ := s.invocation()
		resp, err := intake(asCaller(ctx, "webhook"), ev)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.WriteString(w, resp.Body)
	}))
	t.Cleanup(url.Close)

	var names []string
	for id := int64(7000003001); id < 7000003021; id++ {
		srv.AddJob(githubtest.Job{ID: id, Repo: "octo-org/hello-world", Labels: []string{"self-hosted", "linux", "x64"}})
		if _, err := srv.SendWorkflowJob(url.URL, []byte(testSecret), id, "queued", installation); err != nil {
			t.Fatal(err)
		}
		names = append(names, runner.InstanceName(linuxPool, id, 1))
	}
	lost := 0
	for _, d := range srv.Deliveries() {
		if !d.Sent {
			lost++
		}
	}
	if lost == 0 {
		t.Fatal("no delivery failed at GitHub's side: the test would prove nothing")
	}
	allRunning := func() bool {
		for _, n := range names {
			if !s.hasStatus(n, runner.StatusRunning)() {
				return false
			}
		}
		return true
	}
	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	for pass := 1; pass <= 2 && !allRunning(); pass++ {
		s.drain(t, worker, 20*time.Second, "the delivered jobs' creates", func() bool { v, f, d := s.queueDepth(t); return v+f+d == 0 })
		ctx, _ := s.invocation()
		if _, err := reconciler(ctx, tick); err != nil {
			t.Fatalf("reconcile pass %d: %v", pass, err)
		}
	}
	s.drain(t, worker, 30*time.Second, "every job's runner", allRunning)
	live, err := s.store.ListLiveInstances(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != len(names) {
		t.Fatalf("%d live instances for %d jobs (%d deliveries lost): want exactly one each", len(live), len(names), lost)
	}
	if got := srv.CallCount(githubtest.RouteAppHookDelivery); got != lost {
		t.Errorf("%d deliveries fetched from the log, want the %d lost", got, lost)
	}
}
