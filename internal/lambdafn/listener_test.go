package lambdafn_test

import (
	"context"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/lambdafn/listen"
	"github.com/runfleet/runfleet/internal/lambdafn/work"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testenv"
)

const (
	listenerToken = "ghp_lambdaListener0123456789abcdef"
	scalePool     = "scale-linux"
	scaleSetName  = "linux-scale"
)

// scaleSetGitHub is github.com as a scale-set pool sees it: the fake REST
// API (which mints registration tokens) and the fake Actions service's
// registration endpoint behind one API root.
type scaleSetGitHub struct {
	api     string
	rest    *githubtest.Server
	actions *scalesettest.Server
	setID   int64
}

func newScaleSetGitHub(t testing.TB) *scaleSetGitHub {
	t.Helper()
	rest := githubtest.NewServer(t, githubtest.WithToken(listenerToken))
	rest.AddOrg("octo-org")
	var actionsURL *url.URL
	restURL, _ := url.Parse(strings.TrimSuffix(rest.URL(), "/"))
	front := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		if r.In.URL.Path == "/api/v3/actions/runner-registration" {
			r.SetURL(actionsURL)
			r.Out.URL.Path = "/api/actions/runner-registration"
			return
		}
		r.SetURL(restURL)
	}})
	t.Cleanup(front.Close)
	actions := scalesettest.New(t, scalesettest.Options{
		WebURL: front.URL,
		// Short polls keep an invocation's stop quick; the listener
		// treats a 202 like GitHub's after 50 s.
		PollWindow: 100 * time.Millisecond,
		ExternalToken: func(tok string) bool {
			for _, minted := range rest.RegistrationTokens() {
				if minted.Token == tok {
					return true
				}
			}
			return false
		},
	})
	actionsURL, _ = url.Parse(actions.URL())
	// The scale set exists before the first invocation, so jobs can be
	// queued for it up front; the listener finds it by name.
	set, err := actions.Client(t).EnsureScaleSet(context.Background(), "", scaleset.ScaleSetSpec{Name: scaleSetName})
	if err != nil {
		t.Fatal(err)
	}
	return &scaleSetGitHub{api: front.URL + "/api/v3", rest: rest, actions: actions, setID: set.ID}
}

// config is the config in SSM: one pool fed by the scale set, the token
// read from the GitHub secret.
func (g *scaleSetGitHub) config(controllerID string) string {
	return `controller_id: ` + controllerID + `
github:
  token_env: RUNFLEET_GITHUB_TOKEN
  base_url: ` + g.api + `
webhook:
  secret_env: RUNFLEET_WEBHOOK_SECRET
pools:
  - name: ` + scalePool + `
    owner: octo-org
    labels: [linux, x64]
    max_runners: 5
    scale_set: {name: ` + scaleSetName + `}
    provider:
      type: simulated
`
}

// listenerStack is a stack whose config has a scale-set pool, with the
// GitHub token in Secrets Manager as a deploy keeps it.
func listenerStack(t testing.TB) (*stack, *scaleSetGitHub) {
	t.Helper()
	gh := newScaleSetGitHub(t)
	s := newStack(t, stackOptions{config: gh.config("lambda-test")})
	secret, err := secretsmanager.NewFromConfig(s.aws).CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{
		Name: aws.String(testenv.UniqueName(t, "github-token")), SecretString: aws.String(listenerToken),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(lambdafn.EnvGitHubSecretARN, aws.ToString(secret.ARN))
	return s, gh
}

// listenerFn is the ListenerFunction as deployed, built from the
// environment, with a short lease and margin so invocations of seconds
// stand for Lambda's 75.
func (s *stack) listenerFn() listen.ScheduleHandler {
	return listen.NewListener(func(context.Context) (listen.Options, error) {
		opts, err := s.options(lambdafn.RoleListener)
		return listen.Options{
			Options: opts, Margin: 300 * time.Millisecond, LeaseTTL: 600 * time.Millisecond,
			BackoffMin: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
		}, err
	}, s.logs.Logger(s.logLevel))
}

// invokeListener runs one scheduled invocation that Lambda gives lasts,
// and returns its request id.
func (s *stack) invokeListener(t testing.TB, fn listen.ScheduleHandler, lasts time.Duration) string {
	t.Helper()
	ctx, id := s.invocation()
	ctx, cancel := context.WithTimeout(ctx, lasts)
	defer cancel()
	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	rep, err := fn(ctx, tick)
	if err != nil {
		t.Errorf("invocation %s: %v", id, err)
	}
	if len(rep.Pools) != 1 || rep.Pools[0] != scalePool {
		t.Errorf("invocation %s listened for %v, want [%s]", id, rep.Pools, scalePool)
	}
	return id
}

// jobAdmitted says whether the ledger holds the scale-set job with a
// create message for its instance on the work queue.
func (s *stack) jobAdmitted(t testing.TB, runnerRequestID int64) bool {
	t.Helper()
	id := runner.ScaleSetJobID(runnerRequestID)
	job, err := s.store.GetJob(context.Background(), runner.JobKey(id, 1))
	if err != nil || job.Pool != scalePool {
		return false
	}
	name := runner.InstanceName(scalePool, id, 1)
	return len(s.sends.matching(`"kind":"create"`, name)) == 1
}

// A job assigned to the scale set becomes a ledger job and one create
// message; the next invocation resumes the session the first left (no new
// session, no 409) and loses no message queued in between; nothing is
// left unacknowledged.
func TestListenerFunctionAdmitsJobsAndResumesItsSession(t *testing.T) {
	s, gh := listenerStack(t)
	fn := s.listenerFn()

	first := gh.actions.QueueJob(gh.setID, scalesettest.JobSpec{Repository: "octo-org/app", Labels: []string{scaleSetName}})
	s.invokeListener(t, fn, 2*time.Second)
	if !s.jobAdmitted(t, first) {
		t.Fatalf("after the first invocation the job is not in the ledger with one create message:\n%s", s.logs.Tail(30))
	}
	if n := gh.actions.Count(scalesettest.OpDeleteSession); n != 0 {
		t.Fatalf("%d session deletes at the end of an invocation, want the session kept for the next", n)
	}
	// The invocation's answered polls, under the pool and in the rollup
	// beside the invocation's 0 (ListenerNotPollingAlarm reads its Sum).
	if polls := sum(s.emfValues(t, metrics.ListenerPolls, map[string]string{metrics.LabelPool: scalePool})); polls < 1 {
		t.Errorf("%s{pool=%s} sums to %v after an invocation, want its answered polls", metrics.ListenerPolls, scalePool, polls)
	}
	if rollup := s.emfValues(t, metrics.ListenerPolls, nil); !slices.Contains(rollup, 0) || sum(rollup) < 1 {
		t.Errorf("%s rollup %v, want the invocation's 0 and its polls", metrics.ListenerPolls, rollup)
	}

	// Queued between the invocations: it waits in the scale set's queue.
	second := gh.actions.QueueJob(gh.setID, scalesettest.JobSpec{Repository: "octo-org/app", Labels: []string{scaleSetName}})
	id := s.invokeListener(t, fn, 2*time.Second)
	if !s.jobAdmitted(t, second) {
		t.Fatalf("the job queued between invocations is not in the ledger:\n%s", s.logs.Tail(30))
	}
	if lines := s.logs.Lines(t, map[string]any{"msg": "message session resumed", "aws_request_id": id}); len(lines) != 1 {
		t.Errorf("the second invocation logged %d 'message session resumed', want 1:\n%s", len(lines), s.logs.Tail(30))
	}
	if n := gh.actions.Count(scalesettest.OpCreateSession); n != 1 {
		t.Errorf("%d sessions created over two invocations, want 1 (the second resumes it)", n)
	}
	if n := gh.actions.CountStatus(scalesettest.OpCreateSession, 409); n != 0 {
		t.Errorf("%d session conflicts, want none", n)
	}
	if n := gh.actions.Unacknowledged(gh.setID); n != 0 {
		t.Errorf("%d messages never acknowledged", n)
	}
	if !s.jobAdmitted(t, first) {
		t.Error("the first job's create was sent again (want exactly one create per job)")
	}
}

// A stack whose config has no scale-set pool still runs the listener
// every minute: its invocations write no polls metric, not even the 0,
// so that ListenerNotPollingAlarm (missing data is OK) stays quiet there.
func TestListenerFunctionWithoutAScaleSetPoolWritesNoPolls(t *testing.T) {
	s := newStack(t, stackOptions{})
	ctx, _ := s.invocation()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var tick events.EventBridgeEvent
	mustUnmarshal(t, readTestdata(t, "scheduled-event.json"), &tick)
	rep, err := s.listenerFn()(ctx, tick)
	if err != nil || len(rep.Pools) != 0 {
		t.Fatalf("invocation = %+v, %v; want no pool and no error", rep, err)
	}
	if got := s.emfValues(t, metrics.ListenerPolls, nil); len(got) != 0 {
		t.Errorf("%s written without a scale-set pool: %v", metrics.ListenerPolls, got)
	}
}

// Two invocations that overlap, as consecutive ticks do: the newcomer
// stands by while the other holds the lease and takes over once it lets
// go, resuming the same session. Their turns never overlap, and the job
// queued during the handover is admitted once.
func TestOverlappingListenerInvocationsNeverBothListen(t *testing.T) {
	s, gh := listenerStack(t)
	fn := s.listenerFn()
	// The first builds the App (config, secrets) before the race starts,
	// as a warm execution environment has it.
	s.invokeListener(t, fn, time.Second)
	other := s.listenerFn()

	var wg sync.WaitGroup
	var early, late string
	polls := gh.actions.Count(scalesettest.OpGetMessage)
	wg.Go(func() { early = s.invokeListener(t, fn, 2500*time.Millisecond) })
	// The later tick starts once the earlier one listens, as the next
	// minute's does.
	for gh.actions.Count(scalesettest.OpGetMessage) == polls {
		time.Sleep(10 * time.Millisecond)
	}
	wg.Go(func() { late = s.invokeListener(t, other, 4*time.Second) })
	time.Sleep(time.Second)
	job := gh.actions.QueueJob(gh.setID, scalesettest.JobSpec{Repository: "octo-org/app", Labels: []string{scaleSetName}})
	wg.Wait()

	earlyTurn := s.leaseTurn(t, early)
	lateTurn := s.leaseTurn(t, late)
	if earlyTurn.acquired.IsZero() || lateTurn.acquired.IsZero() {
		t.Fatalf("turns %+v and %+v: want both invocations to hold the lease in turn:\n%s", earlyTurn, lateTurn, s.logs.Tail(40))
	}
	if lateTurn.acquired.Before(earlyTurn.released) {
		t.Errorf("the later invocation took the lease at %s, before the earlier released it at %s",
			lateTurn.acquired.Format(time.StampMilli), earlyTurn.released.Format(time.StampMilli))
	}
	if len(s.logs.Lines(t, map[string]any{"msg": "lease held by another process; standing by", "aws_request_id": late})) == 0 {
		t.Error("the later invocation never stood by")
	}
	if !s.jobAdmitted(t, job) {
		t.Errorf("the job queued during the handover is not in the ledger with one create:\n%s", s.logs.Tail(30))
	}
	if n := gh.actions.Count(scalesettest.OpCreateSession); n != 1 {
		t.Errorf("%d sessions created, want 1 (every later invocation resumes it)", n)
	}
	if n := gh.actions.CountStatus(scalesettest.OpCreateSession, 409); n != 0 {
		t.Errorf("%d session conflicts, want none", n)
	}
}

// turn is when one invocation held a listener's lease.
type turn struct{ acquired, released time.Time }

func (s *stack) leaseTurn(t testing.TB, requestID string) turn {
	t.Helper()
	var out turn
	for _, line := range s.logs.Lines(t, map[string]any{"aws_request_id": requestID}) {
		msg, _ := line["msg"].(string)
		at, _ := time.Parse(time.RFC3339Nano, line["time"].(string))
		switch {
		case strings.HasPrefix(msg, "lease acquired:") && out.acquired.IsZero():
			out.acquired = at
		case strings.HasPrefix(msg, "lease released:"):
			out.released = at
		}
	}
	return out
}

// The worker makes the runner of a job the listener admitted, and
// registers it through the pool's scale set (a scale set gives its jobs to
// its own runners only), with GitHub built from the config as deployed.
func TestWorkerRegistersAScaleSetRunnerThroughItsScaleSet(t *testing.T) {
	s, gh := listenerStack(t)
	rr := gh.actions.QueueJob(gh.setID, scalesettest.JobSpec{Repository: "octo-org/app", Labels: []string{scaleSetName}})
	s.invokeListener(t, s.listenerFn(), 2*time.Second)
	if !s.jobAdmitted(t, rr) {
		t.Fatalf("the job is not in the ledger:\n%s", s.logs.Tail(30))
	}
	worker := work.NewWorker(func(context.Context) (work.Options, error) {
		opts, err := s.options(lambdafn.RoleWorker)
		return work.Options{Options: opts, Providers: s.provs}, err
	}, s.logs.Logger(s.logLevel))
	name := runner.InstanceName(scalePool, runner.ScaleSetJobID(rr), 1)
	s.drain(t, worker, 10*time.Second, name+" running", s.hasStatus(name, runner.StatusRunning))
	if _, err := gh.actions.Client(t).RunnerByName(context.Background(), name); err != nil {
		t.Fatalf("runner %s is not registered in the scale set: %v\n%s", name, err, s.logs.Tail(30))
	}
	if n := gh.actions.Count(scalesettest.OpGenerateJIT); n != 1 {
		t.Errorf("%d JIT configs generated by the scale set, want 1", n)
	}
}
