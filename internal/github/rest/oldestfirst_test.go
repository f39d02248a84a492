package rest_test

import (
	"context"
	"errors"
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
// pace's floor.
func TestBurstUnderGitHubsLimitIsServedOldestFirst(t *testing.T) {
	const jobs = 300
	clock := &testclock.Clock{}
	// A budget that holds a call no longer than a moment: almost every
	// create is held back and comes back later, as it would with many
	// workers each holding one call for the longest wait.
	w := newWorld(t, worldOptions{clock: clock, maxRunners: jobs, quiet: true, budget: budget.Limits{MaxWait: 100 * time.Millisecond},
		fakeOptions: []githubtest.Option{githubtest.WithClock(clock.Now), githubtest.WithSecondaryLimits(githubtest.SecondaryLimits{})}})
	w.StopWorkers()
	start := clock.Now()
	for id := int64(1); id <= jobs; id++ {
		w.deliver(runner.ActionQueued, 5000+id, "")
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 3600 {
		drainShuffled(t, w, rng)
		if len(w.fake.Runners()) == jobs {
			break
		}
		clock.Advance(time.Second) // the queue's delays: turns come due
	}
	took := clock.Now().Sub(start)

	if n := w.fake.SecondaryRefusals(); n != 0 {
		t.Errorf("GitHub refused %d calls", n)
	}
	runners := w.fake.Runners()
	if len(runners) != jobs {
		t.Fatalf("%d runners registered for %d jobs", len(runners), jobs)
	}
	order := make([]int64, len(runners))
	for i, r := range runners {
		inst := w.Instance(r.Name)
		order[i] = inst.JobID
		if inst := w.Instance(r.Name); inst.CreateAttempt != 1 || inst.Status != runner.StatusRunning {
			t.Fatalf("instance %s: attempt %d, %s; want running on its first attempt", r.Name, inst.CreateAttempt, inst.Status)
		}
	}
	if tau := kendallTau(order); tau < 0.95 {
		t.Errorf("Kendall's tau between queued order and registration order %.3f; want ≥ 0.95", tau)
	} else {
		t.Logf("Kendall's tau %.3f", tau)
	}
	// The floor: every JIT registration's points at the budget's pace,
	// less the bucket it starts with.
	l := w.gh.Limits()
	floor := time.Duration(float64(jobs*5-l.Burst) / float64(l.PointsPerMinute) * float64(time.Minute))
	if took > floor*110/100 {
		t.Errorf("the last of %d runners was registered after %s; the pace's floor is %s", jobs, took.Round(time.Second), floor.Round(time.Second))
	}
	t.Logf("%d jobs: last runner after %s (floor %s, %d points a minute)", jobs, took.Round(time.Second), floor.Round(time.Second), l.PointsPerMinute)
}

// drainShuffled handles every message due, those due together in a
// random order, until none is left.
func drainShuffled(t *testing.T, w *world, rng *rand.Rand) {
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
