package rest_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github/budget"
	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
)

// A burst of queued jobs bigger than a minute of GitHub's budget, through
// the engine and the real client, against a GitHub that enforces its
// secondary limit (900 points a minute, penalties): GitHub refuses
// nothing, each job gets exactly one runner with its first create
// attempt, the runners are registered in the order the jobs were queued
// (Kendall's tau ≥ 0.95, the messages due at once handled in any order, as
// SQS and many workers would), and the last one no later than 1.10 × the
// pace's floor — on the burst's stopped clock, so that is the schedule
// the budget keeps, never this machine's speed.
func TestBurstUnderGitHubsLimitIsServedOldestFirst(t *testing.T) {
	r := burst(t, 300, 0)
	r.check(t)
	t.Logf("%s", r)
}

// BenchmarkBurstUnderGitHubsLimit is issue #24's acceptance run: 1,000
// queued jobs against the fake GitHub enforcing 900 points a minute with
// penalties, with one App and with five; time is the fake clock's (each
// budget wait moves it), so the figures are the pace's, not this
// machine's. `make bench` reports them (docs/benchmarks.md).
func BenchmarkBurstUnderGitHubsLimit(b *testing.B) {
	var one time.Duration
	for _, apps := range []int{1, 5} {
		b.Run(fmt.Sprintf("apps=%d", apps), func(b *testing.B) {
			var r burstResult
			for range b.N {
				r = burst(b, 1000, apps-1)
			}
			r.report(b)
			if apps == 1 {
				one = r.took
			} else if one > 0 {
				speedup := float64(one) / float64(r.took)
				b.ReportMetric(speedup, "x-one-app")
				if speedup < 4.5 {
					b.Errorf("%d Apps served the burst %.2f× as fast as one; want ≥ 4.5×", apps, speedup)
				}
			}
			b.Logf("%s", r)
		})
	}
}

// Issue #37's acceptance: of 8 Apps, one GitHub answers 403 to everything
// it authenticates (its installation look-up, its tokens). It is set
// aside after its first refusal, so choosing an App never waits for it:
// 900 queued jobs are issued at the pace of the 7 others (within 1.10 ×
// their floor; the issue asks 1.25 ×), GitHub refuses nothing for a rate
// limit, each job gets one runner on its first attempt, at ≤ 1.05 GitHub
// requests a job. Ratios on the stopped clock, not this machine's speed.
func TestBurstWithAnAppGitHubRefusesKeepsThePaceOfTheOthers(t *testing.T) {
	r := burst(t, 900, 7, testAppID+3)
	r.check(t)
	t.Logf("%s", r)
}

// BenchmarkBurstWithAnAppGitHubRefuses is issue #37's figures: 900 queued
// jobs with 7 healthy Apps, and with the same 7 and an eighth GitHub
// answers 403 to everything; x-floor is against the 7 healthy Apps'
// floor, on the fake clock. `make bench` reports them
// (docs/benchmarks.md).
func BenchmarkBurstWithAnAppGitHubRefuses(b *testing.B) {
	var healthy time.Duration
	for _, refused := range []int{0, 1} {
		b.Run(fmt.Sprintf("apps=%d,refused=%d", 7+refused, refused), func(b *testing.B) {
			var r burstResult
			var refusedApps []int64
			if refused == 1 {
				refusedApps = []int64{testAppID + 3}
			}
			for range b.N {
				r = burst(b, 900, 6+refused, refusedApps...)
			}
			r.report(b)
			if refused == 0 {
				healthy = r.took
			} else if healthy > 0 {
				b.ReportMetric(float64(r.took)/float64(healthy), "x-healthy-7")
			}
			b.Logf("%s", r)
		})
	}
}

// burstResult is what a burst did.
type burstResult struct {
	jobs, apps int
	// refusedApps are the Apps GitHub refused: the floor is the others'.
	refusedApps  int
	refusals     int
	registered   int
	firstAttempt bool
	tau          float64
	took, floor  time.Duration
	callsPerJob  float64
	pointsPerMin int
}

func (r burstResult) String() string {
	return fmt.Sprintf("%d jobs, %d App(s) (%d refused by GitHub): %d refusals, Kendall's tau %.3f, last runner after %s (floor %s, %.3f×), %.3f GitHub calls a job",
		r.jobs, r.apps, r.refusedApps, r.refusals, r.tau, r.took.Round(time.Second), r.floor.Round(time.Second), float64(r.took)/float64(r.floor), r.callsPerJob)
}

// report checks the burst and reports its figures.
func (r burstResult) report(b *testing.B) {
	b.Helper()
	r.check(b)
	b.ReportMetric(float64(r.refusals), "refusals")
	b.ReportMetric(r.tau, "kendall-tau")
	b.ReportMetric(r.took.Seconds(), "last-create-s")
	b.ReportMetric(float64(r.took)/float64(r.floor), "x-floor")
	b.ReportMetric(r.callsPerJob, "calls/job")
}

// check fails tb unless the burst kept every promise.
func (r burstResult) check(tb testing.TB) {
	tb.Helper()
	switch {
	case r.refusals != 0:
		tb.Errorf("GitHub refused %d calls", r.refusals)
	case r.registered != r.jobs || !r.firstAttempt:
		tb.Errorf("%d runners for %d jobs (each on its first attempt: %t)", r.registered, r.jobs, r.firstAttempt)
	case r.tau < 0.95:
		tb.Errorf("Kendall's tau between queued order and registration order %.3f; want ≥ 0.95", r.tau)
	case r.took > r.floor*110/100:
		tb.Errorf("the last of %d runners was registered after %s of virtual time; the pace's floor is %s", r.jobs, r.took.Round(time.Second), r.floor.Round(time.Second))
	case r.callsPerJob > 1.05:
		tb.Errorf("%.3f GitHub calls a job; want ≤ 1.05", r.callsPerJob)
	}
}

// burst queues jobs at once in a world of 1+extraApps Apps, of which
// GitHub refuses refusedApps outright (403 to all they authenticate), on
// a stopped clock, and lets the engine serve them, the messages due
// together handled in random order.
func burst(tb testing.TB, jobs, extraApps int, refusedApps ...int64) burstResult {
	tb.Helper()
	// A stopped clock: time moves only by the budget's waits and the
	// loop's steps, so how long the burst took is the pace's schedule, the
	// same on a busy machine as on a quiet one (issue #30). It stops at the
	// real now because ghinstallation signs the App's JWTs on the real
	// clock, and the fake checks them on this one.
	clock := testclock.AtRealNow()
	// A budget that holds a call no longer than a moment: almost every
	// create is held back and comes back later, as it would with many
	// workers each holding one call for the longest wait.
	w := newWorld(tb, worldOptions{clock: clock, maxRunners: jobs, quiet: true, extraApps: extraApps,
		budget:      budget.Limits{MaxWait: 100 * time.Millisecond},
		fakeOptions: []githubtest.Option{githubtest.WithClock(clock.Now), githubtest.WithSecondaryLimits(githubtest.SecondaryLimits{})}})
	w.StopWorkers()
	for _, id := range refusedApps {
		w.fake.RefuseApp(id)
	}
	start := clock.Now()
	for id := int64(1); id <= int64(jobs); id++ {
		w.deliver(runner.ActionQueued, 5000+id, "")
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 3600 {
		drainShuffled(tb, w, rng)
		if len(w.fake.Runners()) == jobs {
			break
		}
		clock.Advance(time.Second) // the queue's delays: turns come due
	}
	r := burstResult{jobs: jobs, apps: 1 + extraApps, refusedApps: len(refusedApps), refusals: w.fake.SecondaryRefusals(), took: clock.Now().Sub(start), firstAttempt: true}
	runners := w.fake.Runners()
	r.registered = len(runners)
	order := make([]int64, len(runners))
	for i, rn := range runners {
		inst := w.Instance(rn.Name)
		order[i] = inst.JobID
		r.firstAttempt = r.firstAttempt && inst.CreateAttempt == 1 && inst.Status == runner.StatusRunning
	}
	r.tau = kendallTau(order)
	// The floor: every JIT registration's points at the pace of the
	// budgets of the Apps GitHub accepts (each bucket starts empty).
	l := w.gh.Limits()
	r.pointsPerMin = l.PointsPerMinute * (r.apps - r.refusedApps)
	r.floor = time.Duration(float64(jobs*budget.WriteCost) / float64(r.pointsPerMin) * float64(time.Minute))
	r.callsPerJob = float64(w.fake.CallCount("*")) / float64(jobs)
	return r
}

// drainShuffled handles every message due, those due together in a
// random order, until none is left.
func drainShuffled(t testing.TB, w *world, rng *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	for {
		msgs, err := w.Queue.Receive(ctx, queue.ReceiveOptions{Max: 10, Visibility: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			return
		}
		rng.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
		for _, m := range msgs {
			if err := w.Engine.HandleMessage(ctx, m.Body); err != nil && !errors.Is(err, engine.ErrMalformed) {
				t.Fatal(err)
			}
			if err := w.Queue.Ack(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// kendallTau compares order with ascending order: 1 when it is sorted, -1
// when reversed.
func kendallTau(order []int64) float64 {
	concordant, discordant := 0, 0
	for i := range order {
		for j := i + 1; j < len(order); j++ {
			if order[i] < order[j] {
				concordant++
			} else {
				discordant++
			}
		}
	}
	return float64(concordant-discordant) / float64(concordant+discordant)
}
