package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/enginetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
)

// TestReplicasOnPostgres runs three `runfleet serve` processes on one
// database behind a round-robin "load balancer" (the test sends each
// webhook to the next live replica) and kills them with SIGKILL:
//
//  1. every job gets exactly one runner (one instance, one machine, one
//     GitHub runner), whichever replica took its webhook and whichever
//     worker took its create;
//  2. the replica holding the reconciler lease is killed: another takes
//     the lease within its TTL, and the jobs sent after it are served;
//  3. a replica is killed in the middle of a provider create: the
//     instance it was creating is taken over by another replica once the
//     victim's liveness lease has lapsed (issue #32), never while it may
//     still be alive; a replica started while creates run, and every pass
//     of the reconciler meanwhile, leaves the live creates alone.
//
// Throughout, one replica at a time runs reconcile passes.
func TestReplicasOnPostgres(t *testing.T) {
	w := newReplicaWorld(t, pgtest.NewSchema(t))
	lb := &roundRobin{}
	for _, name := range []string{"a", "b", "c"} {
		lb.add(w.start(name))
	}
	holders := map[string]*replicaProc{}
	for _, r := range lb.live {
		holders[r.holder(t)] = r
	}
	all := map[int64]bool{}

	// 1. Webhooks spread over the three.
	for range 9 {
		all[w.queueJob(lb.next())] = true
	}
	w.waitEachJobServedOnce(lb.any(), all)

	// 2. kill -9 of the lease holder.
	holder := w.currentHolder(t, holders)
	killedAt := time.Now()
	if err := holder.proc.Kill(); err != nil {
		t.Fatal(err)
	}
	lb.remove(holder)
	var next *replicaProc
	enginetest.Eventually(t, "another replica to take the reconciler lease", func() bool {
		next = holders[w.leaseHolder()]
		return next != nil && next != holder
	})
	// How soon is a figure of this machine's speed, not a pass or fail here
	// (issue #30): the lease's bound is the leader package's test on a
	// virtual clock, and make chaos-replicas reports it for every kill.
	t.Logf("killed the lease holder %s; %s took the lease %s later (TTL %s)", holder.name, next.name, time.Since(killedAt).Round(time.Millisecond), replicaLeaseTTL)
	for range 3 {
		all[w.queueJob(lb.next())] = true
	}
	w.waitEachJobServedOnce(lb.any(), all)

	// 3. Creates in flight; a replica starts meanwhile; one creating
	// replica is killed.
	fresh := map[int64]bool{}
	for range 4 {
		id := w.queueJob(lb.next())
		all[id], fresh[id] = true, true
	}
	d := w.start("d")
	holders[d.holder(t)] = d
	lb.add(d)
	var victim *replicaProc
	enginetest.Eventually(t, "a provider create to run in a replica", func() bool {
		for _, r := range lb.live {
			if creatingIn(r.proc.PID()) {
				victim = r
				return true
			}
		}
		return false
	})
	victimKilledAt := time.Now()
	if err := victim.proc.Kill(); err != nil {
		t.Fatal(err)
	}
	lb.remove(victim)
	// The victim's instances stay creating until they are recovered, long
	// after the others' creates end.
	creatingAtKill := w.creating(lb.any(), fresh)
	t.Logf("killed %s in the middle of a create; %d instances creating", victim.name, len(creatingAtKill))
	w.waitEachJobServedOnce(lb.any(), all)

	w.checkRecoveries(lb, creatingAtKill, all, victimKilledAt)
	checkOneReconcilerAtATime(t, lb.all)
	checkNoRecoveryAtStart(t, lb.all)
}

// roundRobin is the load balancer: each request to the next live replica.
type roundRobin struct {
	live []*replicaProc
	// all are the replicas ever started, for their logs.
	all []*replicaProc
	n   int
}

func (lb *roundRobin) add(r *replicaProc) {
	lb.live = append(lb.live, r)
	lb.all = append(lb.all, r)
}

func (lb *roundRobin) next() *replicaProc {
	r := lb.live[lb.n%len(lb.live)]
	lb.n++
	return r
}

func (lb *roundRobin) any() *replicaProc { return lb.next() }

func (lb *roundRobin) remove(r *replicaProc) {
	lb.live = slices.DeleteFunc(lb.live, func(l *replicaProc) bool { return l == r })
}

// currentHolder is the replica holding the reconciler lease.
func (w *replicaWorld) currentHolder(t *testing.T, holders map[string]*replicaProc) *replicaProc {
	t.Helper()
	var r *replicaProc
	enginetest.Eventually(t, "a replica to hold the reconciler lease", func() bool {
		r = holders[w.leaseHolder()]
		return r != nil
	})
	return r
}

// waitEachJobServedOnce waits until every job has a running instance and
// then holds the run to exactly one: one instance per job, one machine
// per instance, one GitHub runner per job.
func (w *replicaWorld) waitEachJobServedOnce(via *replicaProc, jobs map[int64]bool) {
	t := w.t
	t.Helper()
	var got map[int64][]*runner.Instance
	enginetest.Eventually(t, fmt.Sprintf("%d jobs to have a running instance", len(jobs)), func() bool {
		got = byJob(w.instances(via))
		for id := range jobs {
			if insts := got[id]; len(insts) == 0 || insts[0].Status != runner.StatusRunning {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("instances by job: %s", describeJobs(got)) })
	machines := w.machinesByName()
	for id := range jobs {
		insts := got[id]
		if len(insts) != 1 {
			t.Errorf("job %d has %d instances, want exactly one: %s", id, len(insts), describeJobs(map[int64][]*runner.Instance{id: insts}))
			continue
		}
		if n := machines[insts[0].Name]; n != 1 {
			t.Errorf("instance %s of job %d has %d machines, want one", insts[0].Name, id, n)
		}
	}
	if runners := w.gh.Runners(); len(runners) != len(jobs) {
		t.Errorf("GitHub has %d runners for %d jobs", len(runners), len(jobs))
	}
}

func describeJobs(m map[int64][]*runner.Instance) string {
	var b strings.Builder
	for id, insts := range m {
		fmt.Fprintf(&b, "\n  job %d:", id)
		for _, i := range insts {
			fmt.Fprintf(&b, " %s %s attempt %d;", i.Name, i.Status, i.CreateAttempt)
		}
	}
	return b.String()
}

// creating returns the instances of jobs that are creating now.
func (w *replicaWorld) creating(via *replicaProc, jobs map[int64]bool) map[string]*runner.Instance {
	out := map[string]*runner.Instance{}
	for _, i := range w.instances(via) {
		if jobs[i.JobID] && i.Status == runner.StatusCreating {
			out[i.Name] = i
		}
	}
	return out
}

// checkRecoveries: the instances creating just after the victim was
// killed that finished at that attempt were another replica's live
// creates, untouched; the victim's were taken over (a second attempt),
// each only once its work had stopped for certain — the victim's liveness
// lapsed (a lease renewed every TTL/3 expires at the earliest TTL less a
// renewal period after the kill) or its claim's end passed (the worker's
// bound: visibility plus grace, short here) — and never before. How soon after that is a figure of this
// machine's speed, logged (make chaos-replicas measures it). No other
// instance of any job was recovered or needed a second attempt.
func (w *replicaWorld) checkRecoveries(lb *roundRobin, creatingAtKill map[string]*runner.Instance, jobs map[int64]bool, killedAt time.Time) {
	t := w.t
	t.Helper()
	recovered := map[string]time.Time{}
	for _, r := range lb.all {
		for _, msg := range []string{"the work holding this instance stopped; taking it over", "instance stuck in creating past its worker's bound; recovering"} {
			for _, l := range r.lines(msg) {
				recovered[l.Instance] = l.Time
			}
		}
	}
	lapsed := killedAt.Add(replicaLivenessTTL - replicaLivenessTTL/3)
	victims := 0
	for _, inst := range w.instances(lb.any()) {
		if !jobs[inst.JobID] {
			continue
		}
		at, ok := recovered[inst.Name]
		before, cut := creatingAtKill[inst.Name]
		switch {
		case !ok && inst.CreateAttempt == 1:
			// Created at the first attempt, nobody interfering.
		case !ok:
			t.Errorf("%s is at create attempt %d without a recovery logged", inst.Name, inst.CreateAttempt)
		case !cut || inst.CreateAttempt == before.CreateAttempt:
			t.Errorf("%s was recovered at %s, but it was not cut off by the kill (creating then: %v; attempt now %d)", inst.Name, at, cut, inst.CreateAttempt)
		default:
			victims++
			earliest := lapsed
			if !before.ClaimUntil.IsZero() && before.ClaimUntil.Before(earliest) {
				earliest = before.ClaimUntil
			}
			t.Logf("%s taken over %s after the kill (its claim ended %s after it; liveness TTL %s)", inst.Name, at.Sub(killedAt).Round(time.Millisecond), before.ClaimUntil.Sub(killedAt).Round(time.Millisecond), replicaLivenessTTL)
			if at.Before(earliest) {
				t.Errorf("%s taken over %s after the kill, while its work may have been alive (until %s after it)", inst.Name, at.Sub(killedAt), earliest.Sub(killedAt))
			}
		}
	}
	if victims == 0 {
		t.Errorf("no create of the killed replica was recovered (creating after the kill: %d)", len(creatingAtKill))
	}
}

// checkOneReconcilerAtATime: each process's reconcile passes span an
// interval of time, and no two processes' spans overlap.
func checkOneReconcilerAtATime(t *testing.T, procs []*replicaProc) {
	t.Helper()
	type span struct {
		name        string
		first, last time.Time
		n           int
	}
	var spans []span
	for _, r := range procs {
		passes := r.lines("reconcile pass")
		if len(passes) > 0 {
			spans = append(spans, span{r.name, passes[0].Time, passes[len(passes)-1].Time, len(passes)})
		}
	}
	for _, s := range spans {
		t.Logf("%s: %d reconcile passes %s–%s", s.name, s.n, s.first.Format(time.StampMilli), s.last.Format(time.StampMilli))
	}
	if len(spans) < 2 {
		t.Errorf("reconcile passes came from %d replicas, want the lease to have changed hands: %+v", len(spans), spans)
	}
	for i, a := range spans {
		for _, b := range spans[i+1:] {
			if a.first.Before(b.last) && b.first.Before(a.last) {
				t.Errorf("%s (%d passes %s–%s) and %s (%d passes %s–%s) reconciled at the same time",
					a.name, a.n, a.first.Format(time.StampMilli), a.last.Format(time.StampMilli),
					b.name, b.n, b.first.Format(time.StampMilli), b.last.Format(time.StampMilli))
			}
		}
	}
}

// checkNoRecoveryAtStart: no replica ran the single-process recovery at
// start, which would take over another replica's live work.
func checkNoRecoveryAtStart(t *testing.T, procs []*replicaProc) {
	t.Helper()
	for _, r := range procs {
		if n := len(r.lines("instance was creating when runfleet stopped; recovering")); n > 0 {
			t.Errorf("%s recovered %d creates at start", r.name, n)
		}
	}
}
