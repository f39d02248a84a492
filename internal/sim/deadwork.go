package sim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// Capacity held by dead work (issue #32). An instance in creating or
// deleting counts against its pool's max_runners; while a task is at its
// create or delete, that is the work's price. Once nobody is — the task's
// process died, or the task gave the work up (a worker leaving its
// message for redelivery, a task ending with the instance still there) —
// the slot is held by dead work, and it must move on (any write to the
// instance: taken over, advanced, recovered) within the bound.

// liveDeadWorkBound is how long an instance in creating or deleting may
// stay there after the work on it died, with replicas over a shared
// store: what serve promises for a dead replica (README, design notes'
// liveness section) — its liveness lease expires at most the TTL (15 s)
// after its death, a live replica's next scan (3 s) takes the work over
// — with a margin for the scan's own store calls and a life begun again
// after an outage; issue #32's acceptance figure, 30 s. Time the store
// was unreachable does not count (deadWorkDue). A takeover that
// regresses to the message's redelivery (5 min) breaks it
// (TestInvariantsCatchDeadWork).
const liveDeadWorkBound = 30 * time.Second

// deadWorkBound is the bound of a process alone on its store, which
// holds no liveness (serve runs none without replicas): its dead work is
// recovered by the next process's start (LeftInFlight, whose provider
// calls may hang up to the provider timeout) or by the message's
// redelivery — the visibility timeout (5 min) plus the takeover grace
// (1 min).
const deadWorkBound = 5*time.Minute + time.Minute

// held is the task at work on an instance: the last one that wrote it
// into creating or deleting, or that took its dead work in hand (prior).
type held struct {
	t      *task
	status runner.Status
	// claim is the instance's claim as this task's write left it: the
	// work the product itself names as holding the instance.
	claim string
	// prior is the dead work a worker took in hand by receiving a message
	// that names the instance: a redelivery, which may take the work over.
	prior *deadWork
}

// deadWork is an instance whose work nobody is doing since since.
type deadWork struct {
	since  time.Time
	status runner.Status
	why    string
	claim  string
}

func (w *world) deadWorkBound() time.Duration {
	switch {
	case w.cfg.DeadWorkBound > 0:
		return w.cfg.DeadWorkBound
	case w.sharedStore():
		return liveDeadWorkBound
	default:
		return deadWorkBound
	}
}

// deadWorkDue is when work dead since since must have moved on: the bound
// later, not counting the time the store was unreachable meanwhile (no
// write moves anything on then; a 40 s outage holds every such instance
// 40 s, and the bound counts from the store's return).
func (w *world) deadWorkDue(since time.Time) time.Time {
	due := since.Add(w.deadWorkBound())
	if o := w.outage; o != nil && o.from.Before(due) && o.until.After(since) {
		due = due.Add(o.until.Sub(later(o.from, since)))
	}
	return due
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// takeInHand notes that the task that has the turn is at a message that
// names instance name: if its work was dead, this task may take it over.
func (w *world) takeInHand(name string) {
	t := w.sched.current
	if t == nil || name == "" {
		return
	}
	w.inHand[t] = name
	if d, ok := w.dead[name]; ok {
		delete(w.dead, name)
		w.holds[name] = held{t: t, status: d.status, claim: d.claim, prior: &d}
	}
}

// wroteInstance notes a write that took effect on instance name, from
// status from to status to, leaving its claim claim, by the task that has
// the turn. A write that moves the status on, or one by the task whose
// message names the instance or by a scan of dead work (a takeover
// re-claiming it), moves dead work on. A write that leaves the status as
// it was does not, nor does it make its task the one at the work, when it
// comes from a task whose message does not name the instance (a webhook
// noting the runner of an instance being created), or when it leaves the
// claim of the work another task holds, or of dead work, as it was: a
// create that lost its instance to a delete and notes the machine it made
// on the deleting record has not taken the delete over, in the product
// (whose takeover reads the claim) or here.
func (w *world) wroteInstance(name string, from, to runner.Status, claim string) {
	t := w.sched.current
	if from == to && !w.takers[t] {
		if t == nil || w.inHand[t] != name {
			return
		}
		if h, ok := w.holds[name]; ok && h.t != t && h.claim == claim {
			return
		}
		if d, ok := w.dead[name]; ok && d.claim == claim {
			return
		}
	}
	if d, ok := w.dead[name]; ok {
		delete(w.dead, name)
		w.countMovedOn(w.now().Sub(d.since))
	}
	if h, ok := w.holds[name]; ok && h.prior != nil {
		w.countMovedOn(w.now().Sub(h.prior.since))
	}
	if t != nil && (to == runner.StatusCreating || to == runner.StatusDeleting) {
		w.holds[name] = held{t: t, status: to, claim: claim}
		return
	}
	delete(w.holds, name)
}

// abandon declares dead the work held by the tasks mine picks. Work a
// task took in hand and let go of without a write is dead since it died
// before, unless the task's process died (a fault of its own: died).
func (w *world) abandon(mine func(*task) bool, why string, died bool) {
	for _, name := range slices.Sorted(maps.Keys(w.holds)) {
		h := w.holds[name]
		if !mine(h.t) {
			continue
		}
		delete(w.holds, name)
		// A death is a fault of its own, even just after an outage:
		// dead since now; work let go is the outage's from its start.
		since := w.deadSince()
		if died {
			since = w.now()
		}
		d := deadWork{since: since, status: h.status, why: why, claim: h.claim}
		if h.prior != nil && !died {
			d = *h.prior
		} else {
			w.stats.inc("deadwork.instances")
			w.tr.add("dead work: %s left %s (%s)", name, h.status, why)
		}
		w.dead[name] = d
		w.sched.at(w.deadWorkDue(d.since), 0, func() { w.checkDeadWork(name, d) })
	}
}

// redeliveryLost notes a message naming instance name received by a
// process that died at the receive (or whose answer an outage lost):
// the redelivery that could have taken the dead work over is hidden for
// another visibility timeout, a fault of its own, from which the dead
// work's bound counts again.
func (w *world) redeliveryLost(name string, err error) {
	if w.sharedStore() && name != "" {
		// A create whose message is hidden by the death waits for that,
		// not for GitHub's budget (github_limit.go's order).
		w.gh.stopsWaiting(name)
	}
	d, ok := w.dead[name]
	if !ok {
		return
	}
	d.since, d.why = w.deadSince(), fmt.Sprintf("%s; its redelivery lost at the receive: %v", d.why, err)
	w.dead[name] = d
	w.tr.add("dead work: %s's redelivery lost (%v)", name, err)
	w.sched.at(w.deadWorkDue(d.since), 0, func() { w.checkDeadWork(name, d) })
}

// abandonTask declares dead the work of the task that has the turn, which
// has let go of its message (done, or left for redelivery) or ended.
func (w *world) abandonTask(why string) {
	if t := w.sched.current; t != nil {
		delete(w.inHand, t)
		w.abandon(func(h *task) bool { return h == t }, why, false)
	}
}

// checkDeadWork fails the run if d is still where it was when its work
// died, its bound later.
func (w *world) checkDeadWork(name string, d deadWork) {
	if cur, ok := w.dead[name]; !ok || cur != d {
		return
	}
	delete(w.dead, name)
	status := "store closed"
	if st := w.openStore(); st != nil {
		inst, err := st.GetInstance(context.Background(), name)
		switch {
		case err != nil:
			status = err.Error()
		case inst.Status != runner.StatusCreating && inst.Status != runner.StatusDeleting:
			return // moved on by a write the ports did not see
		default:
			status = string(inst.Status)
		}
	}
	w.stats.inc("deadwork.past_bound")
	w.violateAbout([]string{name}, "capacity held by dead work moves on within its bound",
		"%s is still %s %s after its work died (%s); bound %s", name, status, w.now().Sub(d.since).Round(time.Second), d.why, w.deadWorkBound())
}

// countMovedOn files how long dead work held its slot, for the figures
// (deadwork.moved_on_within_*).
func (w *world) countMovedOn(d time.Duration) {
	for _, b := range []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 5*time.Minute + 10*time.Second, 6 * time.Minute} {
		if d <= b {
			w.stats.inc(fmt.Sprintf("deadwork.moved_on_within_%03ds", int(b/time.Second)))
			return
		}
	}
	w.stats.inc("deadwork.moved_on_after_360s")
}
