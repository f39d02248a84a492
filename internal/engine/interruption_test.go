package engine_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/testclock"
)

// runningJob queues job id, has its instance made, and GitHub and the
// engine see the runner take it; it returns the instance.
func runningJob(t *testing.T, w *enginetest.World, id int64) *runner.Instance {
	t.Helper()
	w.Deliver(enginetest.Event(runner.ActionQueued, id, ""))
	w.Drain()
	name := enginetest.InstanceName(id)
	inst := w.Instance(name)
	if inst.Status != runner.StatusRunning || inst.ProviderID == "" {
		t.Fatalf("instance of job %d after its create: %+v", id, inst)
	}
	w.GitHub.StartJob(id, name)
	w.Deliver(enginetest.Event(runner.ActionInProgress, id, name))
	return w.Instance(name)
}

func spotNotice(inst *runner.Instance) engine.InterruptionNotice {
	return engine.InterruptionNotice{ProviderID: inst.ProviderID, Kind: runner.InterruptionSpot, Source: "test"}
}

func interrupt(t *testing.T, w *enginetest.World, n engine.InterruptionNotice, want string) {
	t.Helper()
	got, err := w.Engine.HandleInterruption(context.Background(), n)
	if err != nil || got != want {
		t.Fatalf("HandleInterruption(%+v) = %q, %v; want %q", n, got, err, want)
	}
}

// failedOn is the completed event of a job that failed on runnerName.
func failedOn(id int64, runnerName string) runner.JobEvent {
	ev := enginetest.Event(runner.ActionCompleted, id, runnerName)
	ev.Conclusion = "failure"
	return ev
}

// The acceptance case: an interrupted machine's job fails, and GitHub is
// asked to re-run it exactly once — through a redelivered warning and a
// redelivered completed webhook — after its runner was removed.
func TestSpotInterruptionReRunsTheJobExactlyOnce(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	inst := runningJob(t, w, 2001)

	interrupt(t, w, spotNotice(inst), engine.InterruptionMarked)
	interrupt(t, w, spotNotice(inst), engine.InterruptionKnown)
	if got := w.Instance(inst.Name); got.Interruption != runner.InterruptionSpot || got.InterruptedAt.IsZero() || got.Status != runner.StatusRunning {
		t.Fatalf("a running job's instance after the warning: %+v; want it marked and left running", got)
	}

	w.GitHub.FinishJob(2001, "failure")
	w.Deliver(failedOn(2001, inst.Name))
	w.Deliver(failedOn(2001, inst.Name))
	w.Drain()

	if n := w.GitHub.Reruns(2001); n != 1 {
		t.Fatalf("GitHub re-ran job 2001 %d times, want exactly 1", n)
	}
	job := w.Job(2001)
	if job.Status != runner.JobClosed || job.RerunOutcome != runner.RerunDone || job.RerunCalls != 1 || job.Interrupted != inst.Name {
		t.Fatalf("job after its re-run: %+v", job)
	}
	if got := w.Instance(inst.Name); got.Status != runner.StatusDeleted {
		t.Fatalf("interrupted instance = %s, want deleted", got.Status)
	}
	if len(w.GitHub.Runners()) != 0 {
		t.Fatalf("runners left registered: %+v", w.GitHub.Runners())
	}

	// Late deliveries of everything change nothing.
	w.Deliver(failedOn(2001, inst.Name))
	interrupt(t, w, spotNotice(inst), engine.InterruptionNotOurs)
	w.Drain()
	if n := w.GitHub.Reruns(2001); n != 1 {
		t.Fatalf("late deliveries re-ran job 2001 again: %d re-runs", n)
	}
}

// A job that succeeds on a warned machine (it finished within the two
// minutes), or fails on a machine never warned, is not re-run; nor is
// anything for a rebalance recommendation.
func TestOnlyAJobFailingOnAnInterruptedMachineIsReRun(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	lucky := runningJob(t, w, 2101)
	plain := runningJob(t, w, 2102)
	warned := runningJob(t, w, 2103)
	interrupt(t, w, spotNotice(lucky), engine.InterruptionMarked)
	rebalance := spotNotice(warned)
	rebalance.Kind = runner.InterruptionRebalance
	interrupt(t, w, rebalance, engine.InterruptionMarked)

	ok := enginetest.Event(runner.ActionCompleted, 2101, lucky.Name)
	ok.Conclusion = "success"
	w.Deliver(ok)
	w.Deliver(failedOn(2102, plain.Name))
	w.Deliver(failedOn(2103, warned.Name))
	w.Drain()
	for _, id := range []int64{2101, 2102, 2103} {
		if n := w.GitHub.Reruns(id); n != 0 {
			t.Errorf("job %d re-run %d times, want none", id, n)
		}
		if job := w.Job(id); job.Status != runner.JobClosed || job.RerunCalls != 0 {
			t.Errorf("job %d: %+v, want closed with no re-run", id, job)
		}
	}
	if got := w.Instance(warned.Name); got.Interruption != runner.InterruptionRebalance {
		t.Errorf("rebalance recommendation not recorded: %+v", got)
	}
	if b, err := w.Store.GetSpotBreaker(context.Background(), enginetest.Pool); err != nil || len(b.Recent) != 1 {
		t.Errorf("breaker = %+v, %v; want the one spot interruption counted, not the rebalance", b, err)
	}
}

// An interrupted instance whose runner has no job yet is replaced at once
// rather than left to die, and a warning for a machine not ours (another
// stack's) is ignored.
func TestInterruptedIdleRunnerIsDeletedAndForeignMachinesIgnored(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	w.Deliver(enginetest.Event(runner.ActionQueued, 2201, ""))
	w.Drain()
	inst := w.Instance(enginetest.InstanceName(2201))
	interrupt(t, w, spotNotice(inst), engine.InterruptionReplaced)
	w.Drain()
	if got := w.Instance(inst.Name); got.Status != runner.StatusDeleted {
		t.Fatalf("idle interrupted instance = %s, want deleted", got.Status)
	}
	interrupt(t, w, engine.InterruptionNotice{ProviderID: "i-0123456789abcdef0", Kind: runner.InterruptionSpot}, engine.InterruptionNotOurs)

	for _, bad := range []engine.InterruptionNotice{{Kind: runner.InterruptionSpot}, {ProviderID: "i-1", Kind: "sunspots"}} {
		if _, err := w.Engine.HandleInterruption(context.Background(), bad); !errors.Is(err, engine.ErrMalformed) {
			t.Errorf("HandleInterruption(%+v) = %v, want an error matching ErrMalformed", bad, err)
		}
	}
}

// crashingStore fails one job write as a process that died around it
// would: after the write (the record is durable, the next step never
// happens) or before it.
type crashingStore struct {
	store.Store
	when func(next *runner.Job) (crash, afterWrite bool)
	// fired is shared by the store's wrappers across restarts: one crash.
	fired *atomic.Bool
}

func (s *crashingStore) UpdateJob(ctx context.Context, from runner.JobStatus, next *runner.Job) error {
	crash, after := s.when(next)
	if !crash || s.fired.Load() {
		return s.Store.UpdateJob(ctx, from, next)
	}
	s.fired.Store(true)
	if after {
		if err := s.Store.UpdateJob(ctx, from, next); err != nil {
			return err
		}
	}
	return errCrashed
}

// work handles the queue's due messages as a worker would, leaving a
// failed one unacknowledged for redelivery, until none is due.
func work(t *testing.T, w *enginetest.World) (failed int) {
	t.Helper()
	ctx := context.Background()
	for {
		msgs, err := w.Queue.Receive(ctx, queue.ReceiveOptions{Max: 10, Visibility: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			return failed
		}
		for _, m := range msgs {
			if err := w.Engine.HandleMessage(engine.WithDelivery(ctx, m.ID, m.ReceiveCount), m.Body); err != nil {
				failed++
				continue
			}
			if err := w.Queue.Ack(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A crash after the re-run call was recorded and before it was made, and
// one after it was made and before its outcome was recorded: either way
// GitHub re-runs the job exactly once.
func TestInterruptedJobReRunSurvivesCrashes(t *testing.T) {
	cases := map[string]struct {
		crash       func(next *runner.Job) (bool, bool)
		wantOutcome string
	}{
		"between the record and the call": {
			crash: func(next *runner.Job) (bool, bool) {
				return next.Status == runner.JobRerun && next.RerunCalls == 1, true
			},
			wantOutcome: runner.RerunDone,
		},
		// The repeat learns from the run's attempts that the first call
		// took effect, and does not call again.
		"between the call and its outcome": {
			crash:       func(next *runner.Job) (bool, bool) { return next.RerunOutcome != "", false },
			wantOutcome: runner.RerunDone,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clock := &testclock.Clock{}
			fired := &atomic.Bool{}
			w := enginetest.NewWorld(t, enginetest.Options{Now: clock.Now, WrapStore: func(s store.Store) store.Store {
				return &crashingStore{Store: s, when: tc.crash, fired: fired}
			}})
			inst := runningJob(t, w, 2301)
			interrupt(t, w, spotNotice(inst), engine.InterruptionMarked)
			w.GitHub.FinishJob(2301, "failure")
			w.Deliver(failedOn(2301, inst.Name))

			if failed := work(t, w); failed == 0 || !fired.Load() {
				t.Fatalf("the crash was not injected (failed messages %d)", failed)
			}
			// The process dies; the restarted one finds the job owed a
			// re-run with a call recorded, and its message redelivered.
			w.Crash(0)
			clock.Advance(2 * time.Minute)
			enginetest.Eventually(t, "the re-run is recorded", func() bool {
				work(t, w)
				return w.Job(2301).Status == runner.JobClosed
			})
			if n := w.GitHub.Reruns(2301); n != 1 {
				t.Fatalf("GitHub re-ran job 2301 %d times, want exactly 1", n)
			}
			if job := w.Job(2301); job.RerunOutcome != tc.wantOutcome || job.RerunCalls != 2 {
				t.Fatalf("job after the crash and the retry: %+v; want outcome %s after 2 recorded calls", job, tc.wantOutcome)
			}
		})
	}
}

// spotHeard records what the engine tells a metrics observer about spot.
type spotHeard struct {
	engine.NopObserver
	mu          sync.Mutex
	interrupted int
	opened      []bool
}

func (o *spotHeard) SpotInterrupted(string) { o.mu.Lock(); o.interrupted++; o.mu.Unlock() }
func (o *spotHeard) SpotBreaker(_ string, open bool) {
	o.mu.Lock()
	o.opened = append(o.opened, open)
	o.mu.Unlock()
}

// Three interruptions within the window trip a breaker set to three: the
// next machine is on-demand only, and after the cooldown spot again.
func TestThreeInterruptionsTripTheSpotBreaker(t *testing.T) {
	clock := &testclock.Clock{}
	heard := &spotHeard{}
	w := enginetest.NewWorld(t, enginetest.Options{
		Now: clock.Now,
		Pools: enginetest.OnePool(func(p *runner.Pool) {
			p.SpotBreaker = runner.SpotBreakerPolicy{Interruptions: 3, Window: 15 * time.Minute, Cooldown: 30 * time.Minute}
		}),
		Engine: func(o *engine.Options) { o.Observer = heard },
	})
	onDemand := func(id int64) bool {
		t.Helper()
		w.Deliver(enginetest.Event(runner.ActionQueued, id, ""))
		w.Drain()
		reqs := w.Recorder.Requests(enginetest.InstanceName(id))
		if len(reqs) != 1 {
			t.Fatalf("job %d: %d create requests, want 1", id, len(reqs))
		}
		return reqs[0].OnDemandOnly
	}
	for i, id := range []int64{2401, 2402, 2403} {
		inst := runningJob(t, w, id)
		if i == 2 {
			if onDemand(2410) {
				t.Fatal("two interruptions opened a breaker set to three")
			}
		}
		interrupt(t, w, spotNotice(inst), engine.InterruptionMarked)
		interrupt(t, w, spotNotice(inst), engine.InterruptionKnown) // counted once
		clock.Advance(time.Minute)
	}
	if !onDemand(2411) {
		t.Fatal("the create after three interruptions asked for spot")
	}
	if heard.interrupted != 3 || len(heard.opened) != 1 || !heard.opened[0] {
		t.Fatalf("observer heard %d interruptions and breaker changes %v; want 3 and [true]", heard.interrupted, heard.opened)
	}
	clock.Advance(31 * time.Minute)
	if onDemand(2412) {
		t.Fatal("the create after the cooldown was still on-demand only")
	}
	if _, err := w.Engine.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
	if last := heard.opened[len(heard.opened)-1]; last {
		t.Fatal("a reconcile pass after the cooldown reported the breaker open")
	}
}

// serve has no EventBridge: a reconcile pass asks the provider which
// machines it took back, and the job that failed on one is re-run once.
func TestReconcilePollsInterruptedMachines(t *testing.T) {
	w := enginetest.NewWorld(t, enginetest.Options{})
	inst := runningJob(t, w, 2501)
	if !w.Provider.Interrupt(inst.ProviderID) {
		t.Fatal("the simulated provider has no such machine")
	}
	for range 2 {
		rep, err := w.Engine.Reconcile(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_ = rep
	}
	if got := w.Instance(inst.Name); got.Interruption != runner.InterruptionSpot {
		t.Fatalf("a polled interruption did not mark the instance: %+v", got)
	}
	w.GitHub.FinishJob(2501, "failure")
	w.Deliver(failedOn(2501, inst.Name))
	w.Drain()
	if n := w.GitHub.Reruns(2501); n != 1 {
		t.Fatalf("GitHub re-ran job 2501 %d times, want 1", n)
	}
}
