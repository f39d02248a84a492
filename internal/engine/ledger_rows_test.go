package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/github"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

// Each test here is one row of the job-ledger issue's table: a situation
// that lost a job or leaked a machine before the ledger. Every one checks
// "exactly one runner" as "not zero AND not two".

// Row 1: 1,000 jobs, 4 × kill -9, 30 % provider failures (half after the
// machine was made), hangs — 153 jobs never got a runner, 103 of them
// dropped after ONE failed create whose clean-up delete also failed.
func TestLedgerFlakyProviderAndCrashesServeEveryJob(t *testing.T) {
	prov := simulated.NewWithOptions(simulated.Options{Seed: 1, Faults: simulated.Faults{
		CreateFailureRate: 0.3, DeleteFailureRate: 0.3, LeaveFailedMachines: true,
	}})
	w := newLedgerWorld(t, ghsim.New(), prov, ledgerOptions{maxRunners: 200})
	w.StartWorkers(4)
	ids := ledgerJobs(120)
	for i, id := range ids {
		w.Deliver(enginetest.Event(runner.ActionQueued, id, ""))
		if i%30 == 29 {
			w.Crash(4)
		}
	}
	time.Sleep(200 * time.Millisecond)
	w.Crash(4)
	prov.SetFaults(simulated.Faults{})
	serveAndFinish(t, w, ids)
}

// Row 2: 300 jobs, max_runners 10, the same faults, 3 kills — 38 never
// served; and never more than max_runners live instances or machines.
func TestLedgerMaxRunnersHoldsUnderFaultsAndEveryJobIsServed(t *testing.T) {
	prov := simulated.NewWithOptions(simulated.Options{Seed: 2, Faults: simulated.Faults{
		CreateFailureRate: 0.3, DeleteFailureRate: 0.3, LeaveFailedMachines: true,
	}})
	const max = 5
	w := newLedgerWorld(t, ghsim.New(), prov, ledgerOptions{maxRunners: max})
	stop := watchPeak(t, prov, max)
	w.StartWorkers(4)
	ids := ledgerJobs(25)
	for i, id := range ids {
		w.Deliver(enginetest.Event(runner.ActionQueued, id, ""))
		if i%10 == 9 {
			w.Crash(4)
		}
	}
	prov.SetFaults(simulated.Faults{})
	serveAndFinish(t, w, ids)
	stop()
}

// Row 3: GitHub answers three 502s to the JIT call — the job was dropped
// within 3 s with 0 creates.
func TestLedgerJITFailuresDoNotDropTheJob(t *testing.T) {
	gh := ghsim.New()
	for range 9 {
		gh.FailNext(ghsim.OpGenerateJITConfig, errors.New("simulated 502 Bad Gateway"))
	}
	w := newLedgerWorld(t, gh, simulated.NewWithOptions(simulated.Options{}), ledgerOptions{})
	w.StartWorkers(4)
	w.Deliver(enginetest.Event(runner.ActionQueued, 7, ""))
	serveAndFinish(t, w, []int64{7})
}

// Row 4: 1,000 jobs, 30 kills, redeliveries reuse X-GitHub-Delivery — one
// job lost: killed between the delivery mark and the instance write, the
// redelivery was answered "duplicate". Here the process dies at every
// write of the queued's processing in turn; the redelivery (same delivery
// id) always ends with the job served.
func TestLedgerRedeliveryAfterACrashAtAnyWriteServesTheJob(t *testing.T) {
	for n := int64(1); n <= 4; n++ {
		t.Run(fmt.Sprintf("crash at write %d", n), func(t *testing.T) {
			gh, prov := ghsim.New(), simulated.NewWithOptions(simulated.Options{})
			crashed := false
			w := newLedgerWorld(t, gh, prov, ledgerOptions{wrapStore: func(s store.Store) store.Store {
				if crashed {
					return s // the restarted process writes normally
				}
				crashed = true
				return &crashAt{Store: s, n: n}
			}})
			w.StartWorkers(4)
			ev := enginetest.Event(runner.ActionQueued, 7, "")
			_, _ = w.Engine.HandleJobEvent(context.Background(), ev, engine.Webhook("same-delivery"))
			time.Sleep(50 * time.Millisecond)
			w.Crash(4)
			if _, err := w.Engine.HandleJobEvent(context.Background(), ev, engine.Webhook("same-delivery")); err != nil {
				t.Fatalf("redelivery: %v", err)
			}
			serveAndFinish(t, w, []int64{7})
		})
	}
}

// Row 5 (P20): 200 jobs, events in random order (completed before queued,
// late in_progress, duplicates) — 23 machines running forever, the pool
// wedged at max_runners: an active runner was never reaped without its
// completed. Here every order is played, completed is sometimes lost, and
// at the end nothing is left running.
func TestLedgerEventsInAnyOrderLeaveNothingRunning(t *testing.T) {
	gh, prov := ghsim.New(), simulated.NewWithOptions(simulated.Options{})
	w := newLedgerWorld(t, gh, prov, ledgerOptions{bootstrapTimeout: 300 * time.Millisecond})
	w.StartWorkers(4)
	ids := ledgerJobs(40)
	for i, id := range ids {
		q := enginetest.Event(runner.ActionQueued, id, "")
		name := runner.InstanceName(enginetest.Pool, id, 1)
		ip, done := enginetest.Event(runner.ActionInProgress, id, name), enginetest.Event(runner.ActionCompleted, id, name)
		switch i % 5 {
		case 0: // completed first, then the rest late
			gh.SetJob(id, "completed", "cancelled", "")
			w.Deliver(done)
			w.Deliver(q)
			w.Deliver(ip)
		case 1: // in order, with duplicates
			w.Deliver(q)
			w.Deliver(q)
			w.eventually("instance up", func() bool { return w.coveringRunners(id) == 1 })
			gh.StartJob(id, name)
			w.Deliver(ip)
			w.Deliver(ip)
			gh.FinishJob(id, "success")
			w.Deliver(done)
			w.Deliver(q)
		case 2: // in_progress before queued; completed never delivered
			gh.SetJob(id, "completed", "success", name)
			w.Deliver(ip)
			w.Deliver(q)
			gh.Deregister(name)
		case 3: // queued, then its runner runs the job but neither in_progress nor completed arrives
			w.Deliver(q)
			w.eventually("instance up", func() bool { return w.coveringRunners(id) == 1 })
			gh.StartJob(id, name)
			gh.FinishJob(id, "success") // the ephemeral runner ran it and left
		case 4: // queued, in_progress, completed lost
			w.Deliver(q)
			w.eventually("instance up", func() bool { return w.coveringRunners(id) == 1 })
			gh.StartJob(id, name)
			w.Deliver(ip)
			gh.FinishJob(id, "success")
		}
	}
	w.eventually("nothing left running", func() bool {
		w.onlineAll()
		return len(w.Live()) == 0 && len(prov.Machines()) == 0
	})
}

// Row 6 (P18): a job cancelled while waiting for capacity still got a
// machine later, which held a slot until the bootstrap timeout.
func TestLedgerJobCancelledWhileWaitingForCapacityGetsNoMachine(t *testing.T) {
	prov := simulated.NewWithOptions(simulated.Options{})
	w := newLedgerWorld(t, ghsim.New(), prov, ledgerOptions{maxRunners: 1})
	w.StartWorkers(4)
	w.Deliver(enginetest.Event(runner.ActionQueued, 1, ""))
	if out := w.Deliver(enginetest.Event(runner.ActionQueued, 2, "")); out.Result != engine.ResultAwaitingCapacity {
		t.Fatalf("job 2: %s, want awaiting capacity", out.Result)
	}
	w.Deliver(enginetest.Event(runner.ActionCompleted, 2, "")) // cancelled while waiting
	serveAndFinish(t, w, []int64{1})                           // frees the slot
	time.Sleep(300 * time.Millisecond)                         // the scale-up retry comes and goes
	w.reconcile()
	if job := w.Job(2); job.Status != runner.JobClosed || job.Made != 0 {
		t.Fatalf("cancelled job: %s, %d instances made; want closed, 0", job.Status, job.Made)
	}
	if n := prov.CreateCalls(runner.InstanceName(enginetest.Pool, 2, 1)); n != 0 {
		t.Fatalf("the cancelled job got %d creates", n)
	}
}

// Row 7 (P17): a job queued again after approval, after its first runner
// was reaped, was answered "duplicate" and never served.
func TestLedgerJobQueuedAgainAfterApprovalGetsANewRunner(t *testing.T) {
	prov := simulated.NewWithOptions(simulated.Options{})
	w := newLedgerWorld(t, ghsim.New(), prov, ledgerOptions{bootstrapTimeout: 200 * time.Millisecond})
	w.StartWorkers(4)
	w.Deliver(enginetest.Event(runner.ActionQueued, 5, ""))
	w.Deliver(enginetest.Event(runner.ActionWaiting, 5, ""))
	first := runner.InstanceName(enginetest.Pool, 5, 1)
	w.eventually("the idle runner of the waiting job is reaped", func() bool {
		w.onlineAll()
		inst, err := w.Store.GetInstance(context.Background(), first)
		return err == nil && inst.Status == runner.StatusDeleted
	})
	if out := w.Deliver(enginetest.Event(runner.ActionQueued, 5, "")); out.Result != engine.ResultCreated {
		t.Fatalf("queued again: %s, want a new instance", out.Result)
	}
	serveAndFinish(t, w, []int64{5})
	if job := w.Job(5); job.Made != 2 {
		t.Fatalf("job made %d instances, want 2 (one per time it was queued)", job.Made)
	}
}

// Row 8: a create that times out after the cloud launched the machine, with
// a provider whose delete-by-name is a no-op — the retry made a second
// machine with the same name: 10 live machines against max_runners 5; and
// when all attempts failed the record said deleted while 3 machines ran.
func TestLedgerNoOpDeleteByNameNeverLeavesASecondMachine(t *testing.T) {
	machines := simulated.NewWithOptions(simulated.Options{})
	prov := &noOpDeleteByName{Provider: machines}
	prov.failAfterEffect.Store(12)
	const max = 3
	w := newLedgerWorld(t, ghsim.New(), machines, ledgerOptions{maxRunners: max,
		provider: func(*simulated.Provider) providers.Provider { return prov }})
	stop := watchPeak(t, prov.Provider, max)
	w.StartWorkers(4)
	ids := ledgerJobs(max)
	for _, id := range ids {
		w.Deliver(enginetest.Event(runner.ActionQueued, id, ""))
	}
	serveAndFinish(t, w, ids)
	stop()
	if n := len(prov.Machines()); n != 0 {
		t.Fatalf("%d machines left", n)
	}
}

// Row 9: two installations (staging, production) with a pool of the same
// name on one cloud account — the second one terminated the first one's
// busy machine within a second.
func TestLedgerTwoInstallationsNeverTouchEachOthersMachines(t *testing.T) {
	prov := simulated.NewWithOptions(simulated.Options{})
	staging := newLedgerWorld(t, ghsim.New(), prov, ledgerOptions{installation: "staging"})
	production := newLedgerWorld(t, ghsim.New(), prov, ledgerOptions{installation: "production"})
	staging.StartWorkers(4)
	staging.Deliver(enginetest.Event(runner.ActionQueued, 1, ""))
	staging.eventually("staging's runner up", func() bool { return staging.coveringRunners(1) == 1 })
	name := staging.Job(1).Instance
	staging.Deliver(enginetest.Event(runner.ActionInProgress, 1, name))
	for range 3 {
		production.reconcile()
	}
	if len(prov.Machines()) != 1 {
		t.Fatalf("production's reconciler touched staging's machine: %d machines left", len(prov.Machines()))
	}
	if got := len(production.machinesOf()); got != 0 {
		t.Fatalf("production lists %d machines of staging's pool", got)
	}
}

// Row 10: crash recovery — creating waited bootstrap_timeout + 60 s (21 min
// by default) before anything recovered it.
func TestLedgerRecoverAtStartTakesOverCreatingAtOnce(t *testing.T) {
	prov := simulated.NewWithOptions(simulated.Options{Faults: simulated.Faults{HangCreates: true}})
	w := newLedgerWorld(t, ghsim.New(), prov, ledgerOptions{bootstrapTimeout: time.Hour, visibility: 3 * time.Second})
	w.StartWorkers(4)
	w.Deliver(enginetest.Event(runner.ActionQueued, 9, ""))
	name := runner.InstanceName(enginetest.Pool, 9, 1)
	w.eventually("create in flight", func() bool {
		inst, err := w.Store.GetInstance(context.Background(), name)
		return err == nil && inst.Status == runner.StatusCreating
	})
	prov.SetFaults(simulated.Faults{})
	w.Crash(0) // restarts, and recovers what the dead process left
	inst, err := w.Store.GetInstance(context.Background(), name)
	if err != nil || inst.Status == runner.StatusCreating {
		t.Fatalf("after RecoverAtStart the instance is %v (%v); a bootstrap timeout of an hour must not be waited for", inst.Status, err)
	}
	w.StartWorkers(4)
	serveAndFinish(t, w, []int64{9})
}

// P15: GitHub reported busy:false for a runner minutes into its job, and
// the scaler deleted it. One not-busy reading never reaps; two readings a
// confirmation window apart do; and GitHub's 422 on DELETE still guards.
func TestP15OneNotBusyReadingNeverReapsARunner(t *testing.T) {
	gh, prov := ghsim.New(), simulated.NewWithOptions(simulated.Options{})
	w := newLedgerWorld(t, gh, prov, ledgerOptions{confirmWindow: time.Hour})
	w.StartWorkers(4)
	w.Deliver(enginetest.Event(runner.ActionQueued, 3, ""))
	w.eventually("runner up", func() bool { w.onlineAll(); return w.coveringRunners(3) == 1 })
	name := w.Job(3).Instance
	w.Deliver(enginetest.Event(runner.ActionInProgress, 3, name))
	gh.SetBusy(name, false) // GitHub's list lies: the job is running
	for range 5 {
		w.reconcile()
	}
	inst, _ := w.Store.GetInstance(context.Background(), name)
	if inst.Status != runner.StatusRunning || inst.NotBusySince.IsZero() {
		t.Fatalf("after not-busy readings within the window: %s (not busy since %v); want running, window started", inst.Status, inst.NotBusySince)
	}
	gh.SetBusy(name, true)
	w.reconcile()
	if inst, _ = w.Store.GetInstance(context.Background(), name); !inst.NotBusySince.IsZero() {
		t.Fatal("a busy reading must clear the confirmation window")
	}
	if len(prov.Machines()) != 1 {
		t.Fatal("the busy runner's machine was destroyed")
	}
}

func TestP15ConfirmedNotBusyIsReapedButDELETE422StillGuards(t *testing.T) {
	gh, prov := ghsim.New(), simulated.NewWithOptions(simulated.Options{})
	w := newLedgerWorld(t, gh, prov, ledgerOptions{confirmWindow: 30 * time.Millisecond, deleteBackoffMax: time.Hour})
	w.StartWorkers(4)
	w.Deliver(enginetest.Event(runner.ActionQueued, 3, ""))
	w.eventually("runner up", func() bool { w.onlineAll(); return w.coveringRunners(3) == 1 })
	name := w.Job(3).Instance
	gh.StartJob(3, name)
	w.Deliver(enginetest.Event(runner.ActionInProgress, 3, name))
	gh.SetBusy(name, false) // the list lies twice, a window apart …
	w.reconcile()
	time.Sleep(50 * time.Millisecond)
	gh.FailNext(ghsim.OpRemoveRunner, fmt.Errorf("%w: 422 still running a job", github.ErrRunnerBusy)) // … the DELETE does not
	w.reconcile()
	w.eventually("the delete met GitHub's 422", func() bool {
		inst, err := w.Store.GetInstance(context.Background(), name)
		return err == nil && inst.Status == runner.StatusPendingDelete && inst.Attempts > 0
	})
	if len(prov.Machines()) != 1 {
		t.Fatal("a runner GitHub's DELETE reported busy lost its machine")
	}
	gh.FinishJob(3, "success")
	w.Deliver(enginetest.Event(runner.ActionCompleted, 3, name)) // re-sends the delete at once
	w.eventually("the finished runner is reaped", func() bool { return len(prov.Machines()) == 0 })
}

// P16: a job waited for a runner forever after the runner made for it
// died. Demand stays open; the dead runner is replaced, however many times
// — but only after GitHub says the job is still queued.
func TestP16DeadRunnerIsReplacedWhileTheJobIsQueued(t *testing.T) {
	gh, prov := ghsim.New(), simulated.NewWithOptions(simulated.Options{})
	w := newLedgerWorld(t, gh, prov, ledgerOptions{bootstrapTimeout: 100 * time.Millisecond})
	w.StartWorkers(4)
	w.Deliver(enginetest.Event(runner.ActionQueued, 4, ""))
	// Its machines never come online: each is reaped and replaced.
	w.eventually("three instances made for the job", func() bool { return w.Job(4).Made >= 3 })
	if n := len(prov.Machines()); n > 1 {
		t.Fatalf("%d machines for one job", n)
	}
	calls := gh.Calls(ghsim.OpGetJob)
	if calls < 2 {
		t.Fatalf("GitHub was asked %d times whether the job is still queued; want once per ended instance", calls)
	}
	gh.SetJob(4, "completed", "cancelled", "")
	made := w.Job(4).Made
	w.eventually("demand closed by GitHub's answer", func() bool { return w.Job(4).Status == runner.JobClosed })
	time.Sleep(300 * time.Millisecond)
	if got := w.Job(4).Made; got > made+1 {
		t.Fatalf("instances kept being made after GitHub said the job completed: %d → %d", made, got)
	}
	w.eventually("nothing left", func() bool { return len(w.Live()) == 0 && len(prov.Machines()) == 0 })
}

// P19: dead runner records held capacity and wedged scaling. A runner
// whose job ended without a completed webhook frees its slot within two
// reconcile passes; max_runners 1 then serves the next job.
func TestP19FinishedRunnerWithoutCompletedFreesItsSlot(t *testing.T) {
	gh, prov := ghsim.New(), simulated.NewWithOptions(simulated.Options{})
	w := newLedgerWorld(t, gh, prov, ledgerOptions{maxRunners: 1, confirmWindow: 20 * time.Millisecond})
	w.StartWorkers(4)
	w.Deliver(enginetest.Event(runner.ActionQueued, 1, ""))
	w.eventually("runner up", func() bool { w.onlineAll(); return w.coveringRunners(1) == 1 })
	name := w.Job(1).Instance
	w.Deliver(enginetest.Event(runner.ActionInProgress, 1, name))
	w.Deliver(enginetest.Event(runner.ActionQueued, 2, ""))
	gh.Deregister(name) // job done, the ephemeral runner left; completed never comes
	w.reconcile()
	time.Sleep(30 * time.Millisecond)
	w.reconcile()
	w.eventually("the slot is freed and job 2 served", func() bool {
		w.onlineAll()
		return w.coveringRunners(2) == 1
	})
	if prov.CreateCalls(name) != 1 || len(prov.Machines()) != 1 {
		t.Fatalf("machines: %d", len(prov.Machines()))
	}
}
