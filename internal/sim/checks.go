package sim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// The invariants. Those that must hold at every moment are checked after
// every step (checkSafety reads the store after each step that wrote it;
// the cloud checks machines as they are made and destroyed, cloud.go; the
// GitHub model checks removals, github_api.go):
//
//   - never two live machines for one instance;
//   - never more than max_runners live instances, or live machines, per
//     pool;
//   - never a machine destroyed while its runner runs a job, unless an
//     operator forced that instance's delete;
//   - at most one instance serves a job attempt at a time (P2, P17): of the
//     live instances made for a job, not on their way out and not taken
//     by another job, there is never more than one;
//   - never a runner removed that runfleet did not register;
//   - no spot create while the pool's spot breaker is open (checked as a
//     create reaches the provider, spot_breaker.go);
//   - no machine is made for a job GitHub has finished: for an instance
//     the ledger made after runfleet acknowledged that news (checked as
//     the cloud launches a machine, finished_checks.go).
//
// Those that must hold once the world is quiet (faults off, every job
// runfleet could serve served, several reconcile intervals later) are
// checked by checkQuiescence.

// checkSafety checks the store-side invariants after a step that wrote.
func (w *world) checkSafety() {
	if !w.storeDirty {
		return
	}
	w.storeDirty = false
	st := w.openStore()
	if st == nil {
		return
	}
	live, err := st.ListLiveInstances(context.Background())
	if err != nil {
		w.tr.add("check: cannot list live instances: %v", err)
		return
	}
	perPool := map[string]int{}
	serving := map[string][]string{}
	for _, inst := range live {
		perPool[inst.Pool]++
		if servesJob(inst) {
			key := runner.JobKey(inst.JobID, inst.RunAttempt)
			serving[key] = append(serving[key], inst.Name+"("+string(inst.Status)+")")
		}
	}
	for _, pool := range w.pools {
		if n := perPool[pool.Name]; n > pool.MaxRunners {
			w.violate("never more than max_runners live instances per pool", "pool %s has %d live instances, max_runners %d", pool.Name, n, pool.MaxRunners)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(serving)) {
		if names := serving[key]; len(names) > 1 {
			w.violateAbout([]string{key}, "at most one instance serves a job attempt at a time", "job %s has %d: %s", key, len(names), strings.Join(names, ", "))
		}
	}
}

// servesJob: a live instance made for a job, not on its way out, and not
// running another job.
func servesJob(inst *runner.Instance) bool {
	if inst.JobID == 0 || (inst.ActiveJobID != 0 && inst.ActiveJobID != inst.JobID) {
		return false
	}
	// A runner that finished a job (GitHub named it in a completed) is done
	// — ephemeral — whatever its instance's status: it serves no job.
	if inst.RunnerStatus == runner.RunnerTerminated {
		return false
	}
	switch inst.Status {
	case runner.StatusPendingCreate, runner.StatusCreating, runner.StatusRunning, runner.StatusStopped, runner.StatusUnknown:
		return true
	}
	return false
}

// checkQuiescence checks what must hold once faults have stopped and the
// world has drained.
func (w *world) checkQuiescence() {
	ctx := context.Background()
	p := w.proc
	if p == nil || !p.up {
		w.violate("runfleet is up at the end", "the process is not running")
		return
	}
	st := p.state.Store
	g := w.gh

	for _, j := range g.jobs {
		switch {
		case j.runner != nil && !j.runner.foreign:
			w.stats.inc("jobs.ran_on_runfleet_runner")
		}
		if j.ss != nil {
			w.actions.checkJob(j)
			continue
		}
		if j.Pool != "" && !g.known(j) && !g.everAccepted(j, runner.ActionQueued) {
			// Every queued delivery failed; the reconciler recovers it
			// from GitHub's delivery log, which always has it.
			w.stats.inc("jobs.queued_delivery_all_failed")
		}
		if j.Status == jobQueued && j.Pool != "" && (g.known(j) || g.logged(j, runner.ActionQueued)) {
			w.violateAbout(aboutJob(j.ID), "no job left queued in GitHub that runfleet could serve", "job %d (pool %s, queued %s ago) is still queued; ledger: %s", j.ID, j.Pool, w.now().Sub(j.QueuedAt).Round(1e9), w.ledgerOf(j))
		}
	}

	for _, m := range w.cloud.machines {
		if !m.alive || m.foreign {
			continue
		}
		inst, err := st.GetInstance(ctx, m.name)
		if err != nil || !inst.Status.Live() {
			w.violateAbout([]string{m.name, m.pid}, "no machine without a live record", "machine %s (%s) runs; its record: %s", m.pid, m.name, recordState(inst, err))
		}
	}

	for _, r := range g.runners {
		if !r.registered || r.foreign {
			continue
		}
		inst, err := st.GetInstance(ctx, r.Name)
		if err != nil || !inst.Status.Live() {
			w.violateAbout([]string{r.Name}, "no runner registered in GitHub without a live record", "runner %s (id %d, online %v) is registered; its record: %s", r.Name, r.ID, r.online, recordState(inst, err))
		}
	}

	live, err := st.ListLiveInstances(ctx)
	if err != nil {
		w.violate("the store answers", "list live instances: %v", err)
		return
	}
	idle := map[string]int{}
	for _, inst := range live {
		if inst.Status != runner.StatusRunning {
			w.violateAbout([]string{inst.Name}, "nothing in a transitional state", "instance %s is %s (runner %s, %d attempts, fault %q)", inst.Name, inst.Status, inst.RunnerStatus, inst.Attempts, inst.ProviderFault)
			continue
		}
		if r := g.registeredByName(inst.Name); r != nil && r.running() {
			continue
		}
		idle[inst.Pool]++
	}
	for _, pool := range w.pools {
		// A pool with a queue-time target keeps what its forecast asks
		// for, which max_idle bounds (and min_idle floors).
		keep := pool.MinIdle
		if pool.Warm != nil {
			keep = max(keep, pool.Warm.MaxIdle)
		}
		if idle[pool.Name] > keep {
			w.violate("no live instance that nothing needs beyond min_idle", "pool %s keeps %d instances no job needs (min_idle %d, warm %v)", pool.Name, idle[pool.Name], pool.MinIdle, pool.Warm != nil)
		}
	}

	open, err := st.ListOpenJobs(ctx)
	if err != nil {
		w.violate("the store answers", "list open jobs: %v", err)
		return
	}
	for _, lj := range open {
		gj := g.byLedgerID(lj.ID)
		if gj == nil || (gj.Status != jobQueued && gj.Status != jobWaiting) {
			status := "nothing"
			if gj != nil {
				status = gj.Status
			}
			w.violateAbout(aboutJob(lj.ID), "nothing in a transitional state", "ledger job %s is %s but GitHub says %s; ledger: %s", lj.Key(), lj.Status, status, w.ledgerOfKey(lj.Key()))
		}
	}

	g.checkReruns()
	g.checkBudget()
}

// checkReruns: a job that failed on a machine the cloud took back is
// re-run exactly once (GitHub accepted one re-run of it: not none, not
// two); no other job is ever re-run. The re-run's own attempt is a job
// like any other, held to the same checks (served, nothing left queued,
// one instance at a time). A failed job every completed delivery of which
// was lost is one runfleet never learnt had failed: it is counted
// (jobs.interrupted_runfleet_never_told), not failed.
//
// One exception, an engine limitation: a job that failed on its own
// within the two-minute warning (its completed_at at or after the
// warning, or, with no warning seen, two minutes before the termination)
// may be re-run (once). The engine re-runs a job whose completed names a
// runner marked interrupted unless its completed_at is before the
// warning; inside the warning it cannot tell the job's own failure from
// the shutdown's (reliability.md). An own failure before the warning that
// is re-run fails the first check below.
func (g *githubWorld) checkReruns() {
	w := g.w
	for _, j := range g.jobs {
		if j.rerunOf != nil {
			w.stats.inc("jobs.rerun_attempts")
			if j.runner != nil && !j.runner.foreign {
				w.stats.inc("jobs.rerun_attempts_ran_on_runfleet_runner")
			}
		}
		switch {
		case ownFailureInWarning(j) && j.rerunsAccepted <= 1:
			w.stats.inc(fmt.Sprintf("jobs.own_failure_in_warning_rerun_%d", j.rerunsAccepted))
		case !j.interrupted && j.rerunsAccepted > 0:
			w.violateAbout(aboutJob(j.ID), "a job that was not interrupted is never re-run", "job %d (attempt %d, %s %s, lost %v) was re-run %d times; ledger: %s", j.ID, j.RunAttempt, j.Status, j.Conclusion, j.lost, j.rerunsAccepted, w.ledgerOf(j))
		case !j.interrupted:
		case j.rerunsAccepted == 1:
			w.stats.inc("jobs.interrupted_rerun_once")
		case j.rerunsAccepted == 0 && !g.toldCompleted(j) && !g.logged(j, runner.ActionCompleted):
			w.stats.inc("jobs.interrupted_runfleet_never_told")
		default:
			w.violateAbout(aboutJob(j.ID), "a job that failed on an interrupted runner is re-run exactly once", "job %d (attempt %d, on %s) was re-run %d times; ledger: %s", j.ID, j.RunAttempt, j.runner.Name, j.rerunsAccepted, w.ledgerOf(j))
		}
	}
}

// ownFailureInWarning: the job failed by itself, while its machine ran,
// and completed no earlier than the machine's warning: the engine sees its
// completed_at within the interruption (the warning's time on the
// EventBridge path; the termination less the lead when polled, which is
// the same time here).
func ownFailureInWarning(j *ghJob) bool {
	if j.Status != jobCompleted || j.Conclusion != "failure" || j.lost || j.runner == nil || j.runner.machine == nil {
		return false
	}
	m := j.runner.machine
	since := m.warnedAt
	if since.IsZero() && !m.interruptedAt.IsZero() {
		since = m.interruptedAt.Add(-spotWarning)
	}
	return !since.IsZero() && !j.CompletedAt.Before(since)
}

func recordState(inst *runner.Instance, err error) string {
	if err != nil {
		return err.Error()
	}
	return string(inst.Status)
}

// recordOf describes an instance's record for a violation message, read
// from the current process's store.
func (w *world) recordOf(name string) string {
	st := w.openStore()
	if st == nil {
		return "store closed"
	}
	inst, err := st.GetInstance(context.Background(), name)
	if err != nil {
		return err.Error()
	}
	return string(inst.Status)
}

// ledgerOf describes a job's ledger record, and the instance it names, for
// a violation message.
func (w *world) ledgerOf(j *ghJob) string {
	return w.ledgerOfKey(runner.JobKey(j.ledgerID(), j.RunAttempt))
}

func (w *world) ledgerOfKey(key string) string {
	st := w.openStore()
	if st == nil {
		return "store closed"
	}
	lj, err := st.GetJob(context.Background(), key)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s rerun_calls=%d rerun_outcome=%q interrupted=%q made=%d checked_made=%d next_attempt_at=+%s instance=%s (%s)", lj.Status, lj.RerunCalls, lj.RerunOutcome, lj.Interrupted, lj.Made, lj.CheckedMade,
		lj.NextAttemptAt.Sub(w.tr.start).Round(time.Second), lj.Instance, w.recordOf(lj.Instance))
}
