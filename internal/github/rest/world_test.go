package rest_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/budget"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/github/spread"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/webhook"
	"github.com/runfleet/runfleet/providers/simulated"
)

// world is the test world with runfleet's real GitHub client, talking to
// the fake GitHub, in place of the simulated one; two workers run.
type world struct {
	*enginetest.World
	fake *githubtest.Server
	gh   *rest.Client
	hook int64 // the fake's webhook of worldOptions.hook
}

type worldOptions struct {
	// deleteBackoffMax is the engine's longest delete retry delay — and how
	// long a delete refused as busy waits; default 200ms.
	deleteBackoffMax time.Duration
	faults           simulated.Faults
	// defaultInstallation is github.app.installation_id; default 777.
	defaultInstallation int64
	fakeOptions         []githubtest.Option
	quiet               bool // log nothing, for benchmarks
	// deliveries, when set, gives the engine the client as its webhook
	// delivery log (the engine's Options.Deliveries, with Log and Parse
	// filled in).
	deliveries *engine.DeliveryRecovery
	// token makes the client authenticate with the personal access token
	// instead of the App; hook, when set, is a webhook of that owner
	// registered on the fake, whose log the engine reads instead of the
	// App's (world.hook is its id).
	token bool
	hook  string
	// maxRunners is the pool's limit; default enginetest's (10).
	maxRunners int
	// clock, when set, is the engine's, its queue's and the client's clock
	// (the client's budget waits move it instead of waiting).
	clock *testclock.Clock
	// budget is the client's budget limits (default the client's).
	budget budget.Limits
	// extraApps are more Apps (ids testAppID+1, …) installed on the test
	// org, their clients and the first spread (internal/github/spread).
	extraApps int
}

func newWorld(t testing.TB, o worldOptions) *world {
	t.Helper()
	if o.defaultInstallation == 0 {
		o.defaultInstallation = testInstallationID
	}
	for i := 1; i <= o.extraApps; i++ {
		o.fakeOptions = append(o.fakeOptions, githubtest.WithApp(testAppID+int64(i), appKey().PublicKey),
			githubtest.WithAppInstallation(testAppID+int64(i), testInstallationID+int64(1000*i), testOrg))
	}
	w := &world{fake: fakeGitHub(t, o.fakeOptions...)}
	opts := enginetest.Options{
		Faults:           o.faults,
		DeleteBackoffMax: o.deleteBackoffMax,
		GitHub: func(log *slog.Logger) github.GitHub {
			ro := rest.Options{
				BaseURL:        w.fake.GHESURL(),
				AppID:          testAppID,
				PrivateKey:     appKey().PrivateKeyPEM,
				InstallationID: o.defaultInstallation,
				Logger:         log,
				Budget:         o.budget,
			}
			if o.token {
				ro.AppID, ro.PrivateKey, ro.InstallationID, ro.Token = 0, nil, 0, testPAT
			}
			if o.clock != nil {
				ro.Now, ro.Sleep = o.clock.Now, o.clock.Sleep
			}
			var apps []spread.App
			for i := 0; i <= o.extraApps; i++ {
				if !o.token {
					ro.AppID = testAppID + int64(i)
				}
				if i > 0 {
					ro.InstallationID = 0 // found for the org
				}
				gh, err := rest.New(ro)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					w.gh = gh
				}
				apps = append(apps, gh)
			}
			if len(apps) == 1 {
				return w.gh
			}
			g, err := spread.New(apps, log)
			if err != nil {
				t.Fatal(err)
			}
			return g
		},
	}
	if o.clock != nil {
		opts.Now = o.clock.Now
	}
	if o.maxRunners > 0 {
		opts.Pools = enginetest.OnePool(func(p *runner.Pool) { p.MaxRunners = o.maxRunners })
	}
	if o.quiet {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if o.hook != "" {
		w.hook = w.fake.AddHook(o.hook)
	}
	if o.deliveries != nil {
		opts.Engine = func(eo *engine.Options) {
			r := *o.deliveries
			src := engine.AppDeliveries(w.gh)
			if o.hook != "" {
				h, err := github.ParseHook(o.hook, w.hook)
				if err != nil {
					t.Fatal(err)
				}
				src = engine.HookDeliveries(h, w.gh.HookDeliveries(h))
			}
			r.Logs, r.Parse = []engine.DeliverySource{src}, webhook.ParseRecovered
			eo.Deliveries = &r
		}
	}
	w.World = enginetest.NewWorld(t, opts)
	w.StartWorkers(2)
	return w
}

// deliver hands the engine a job event of the world's org, sent by the
// installation the fake knows.
func (w *world) deliver(action runner.JobAction, jobID int64, runnerName string) engine.Outcome {
	w.TB.Helper()
	ev := enginetest.Event(action, jobID, runnerName)
	ev.InstallationID = testInstallationID
	return w.Deliver(ev)
}

// startJob plays GitHub handing the job to the instance's runner (online,
// busy) and delivers in_progress.
func (w *world) startJob(jobID int64) {
	w.TB.Helper()
	name := enginetest.InstanceName(jobID)
	w.fake.AddJob(githubtest.Job{ID: jobID, Repo: testRepo, Labels: enginetest.Labels()})
	if !w.fake.StartJob(jobID, name) {
		w.TB.Fatalf("the fake has no runner %s for job %d", name, jobID)
	}
	w.deliver(runner.ActionInProgress, jobID, name)
}

// lifecycle runs one job from queued to deleted the way GitHub would.
func (w *world) lifecycle(jobID int64) {
	w.TB.Helper()
	name := enginetest.InstanceName(jobID)
	w.deliver(runner.ActionQueued, jobID, "")
	w.WaitStatus(name, runner.StatusRunning)
	w.startJob(jobID)
	w.fake.FinishRunner(name) // the job ends; the JIT runner removes itself
	w.deliver(runner.ActionCompleted, jobID, name)
	w.WaitStatus(name, runner.StatusDeleted)
}

// callsAt lists the fake's answered calls of one route.
func (w *world) callsAt(route string) []githubtest.Call {
	var out []githubtest.Call
	for _, c := range w.fake.Calls() {
		if c.Route == route {
			out = append(out, c)
		}
	}
	return out
}
