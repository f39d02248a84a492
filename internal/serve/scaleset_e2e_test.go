package serve_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"testing"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/serve"
	"github.com/runfleet/runfleet/internal/testlog"
)

const e2eToken = "ghp_scaleSetEndToEnd0123456789abcdef"

// oneGitHub puts the fake REST API and the fake Actions service's
// registration endpoint behind one API root, as github.com serves both:
// POST {api}/actions/runner-registration goes to the Actions fake, every
// other call to the REST fake.
func oneGitHub(t *testing.T) (api string, rest *githubtest.Server, actions *scalesettest.Server) {
	t.Helper()
	rest = githubtest.NewServer(t, githubtest.WithToken(e2eToken))
	rest.AddOrg("octo-org")
	front, actions := scalesettest.BehindREST(t, rest.URL(), scalesettest.Minted(rest), scalesettest.Options{})
	return front.URL + "/api/v3", rest, actions
}

// The whole chain under serve: the REST client mints the registration
// token, the listener opens a session on the scale set it made, a job
// assigned to it gets a runner registered through the scale set, runs, and
// the runner is removed from the scale set; serve's stop deletes the
// session.
func TestServeFeedsAScaleSetPoolEndToEnd(t *testing.T) {
	api, rest, actions := oneGitHub(t)
	_, logs, stop := serveOnGitHub(t, scaleSetConfig(t.TempDir(), "{token_env: TOKEN, base_url: '"+api+"'}"))
	explain := func() string { return logs.Tail(30) }
	enginetest.Eventually(t, "the listener's session", func() bool {
		return len(logs.WithMessage(t, "message session created")) > 0
	}, explain)
	if len(rest.RegistrationTokens()) == 0 {
		t.Fatal("no registration token was minted through the REST API")
	}

	client := actions.Client(t)
	set, err := client.EnsureScaleSet(context.Background(), "", scaleset.ScaleSetSpec{Name: "linux-scale"})
	if err != nil {
		t.Fatal(err)
	}
	id := actions.QueueJob(set.ID, scalesettest.JobSpec{Repository: "octo-org/app", Labels: []string{"linux-scale"}})
	name := runner.InstanceName("p", runner.ScaleSetJobID(id), 1)
	enginetest.Eventually(t, "the job's runner registered in the scale set", func() bool {
		_, err := client.RunnerByName(context.Background(), name)
		return err == nil
	}, explain)
	if err := actions.StartJob(id, name); err != nil {
		t.Fatal(err)
	}
	if err := actions.CompleteJob(id, scaleset.ResultSucceeded); err != nil {
		t.Fatal(err)
	}
	enginetest.Eventually(t, "the runner removed from the scale set", func() bool {
		_, err := client.RunnerByName(context.Background(), name)
		return errors.Is(err, scaleset.ErrRunnerNotFound)
	}, explain)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := actions.Count(scalesettest.OpDeleteSession); n != 1 {
		t.Errorf("%d session deletes when serve stopped, want 1", n)
	}
	if n := actions.Unacknowledged(set.ID); n != 0 {
		t.Errorf("%d messages never acknowledged", n)
	}
}

// serveOnGitHub runs serve in the background with config yaml and the
// e2e token, until the test ends or stop; it returns serve's base URL and
// its log.
func serveOnGitHub(t *testing.T, yaml string) (base string, logs *testlog.Buffer, stop func() error) {
	t.Helper()
	cfg := parseConfig(t, yaml)
	cfg.GitHub.Token = e2eToken
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs = &testlog.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.Options{Config: cfg, Listener: ln, Logger: logs.Logger(slog.LevelDebug)})
	}()
	stop = sync.OnceValue(func() error { cancel(); return <-done })
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	base = "http://" + ln.Addr().String()
	waitHealthy(t, base)
	return base, logs, stop
}
