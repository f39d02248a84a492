package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
	"github.com/runfleet/runfleet/internal/runner"
)

// scaleSetObservation is what the Actions service holds at the end of a
// scale-set run.
type scaleSetObservation struct {
	found bool // runfleet's listener made the scale set
	// runners are the runners still registered in the scale set.
	runners []scalesettest.RunnerInfo
	// unacknowledged counts the scale set's messages never acknowledged.
	unacknowledged int
	// calls counts the service's answers, by endpoint and status.
	calls map[scalesettest.Op]map[int]int
}

func observeScaleSet(a *actionsService) *scaleSetObservation {
	o := &scaleSetObservation{calls: map[scalesettest.Op]map[int]int{}}
	setID, found := a.scaleSet()
	o.found = found
	for _, r := range a.Runners() {
		if r.SetID == setID {
			o.runners = append(o.runners, r)
		}
	}
	if found {
		o.unacknowledged = a.Unacknowledged(setID)
	}
	for _, c := range a.Calls() {
		if o.calls[c.Op] == nil {
			o.calls[c.Op] = map[int]int{}
		}
		o.calls[c.Op][c.Status]++
	}
	return o
}

// checkScaleSet adds a scale-set run's violations: runners left in the
// scale set, and a killed listener not listening again within
// relistenLimit of its restart.
func (r *report) checkScaleSet(v func(format string, args ...any)) {
	o := r.obs.scaleSet
	if o == nil {
		return
	}
	if !o.found {
		v("runfleet's listener never made the scale set %s", chaosScaleSet)
	}
	if len(o.runners) > 0 {
		var left []string
		for _, rr := range o.runners {
			left = append(left, fmt.Sprintf("%s (id %d, busy %v)", rr.Name, rr.ID, rr.Busy))
		}
		v("%d runner(s) still registered in the scale set: %s", len(o.runners), names(left))
	}
	if late := r.madeForFinished(); len(late) > 0 {
		v("%d machine(s) made for a job GitHub had finished more than %s before: %s", len(late), finishedGrace, names(late))
	}
	for i, rl := range r.relisten {
		switch {
		case !rl.late():
		case rl.after == notListening:
			v("kill -9 #%d: the listener did not poll again in the %s after its restart (limit %s)", i+1, round(rl.window), relistenLimit)
		default:
			v("kill -9 #%d: the listener polled again only %s after its restart (limit %s)", i+1, round(rl.after), relistenLimit)
		}
	}
}

// finishedGrace is how long after GitHub finished a job a machine made
// for it is still excused: runfleet hears of the finish through its
// listener, which a kill -9 may keep from polling for up to
// relistenLimit, and a create decided just before may still launch.
const finishedGrace = 2 * relistenLimit

// madeForFinished names the machines first seen more than finishedGrace
// after GitHub finished the job they were made for (completed on a runner,
// or canceled before any took it): a job reopened by a late copy of its
// messages gets one machine after another (issue #36).
func (r *report) madeForFinished() []string {
	var out []string
	for _, j := range r.obs.jobs {
		finished := j.canceledAt
		if finished.IsZero() && j.state == jobDone {
			finished = j.finishAt
		}
		if j.requestID == 0 || finished.IsZero() {
			continue
		}
		first := runner.InstanceName(chaosPool, runner.ScaleSetJobID(j.requestID), 1)
		for _, m := range r.obs.machines {
			name := m.Instance.Name
			if (name == first || strings.HasPrefix(name, first+"-r")) && m.seenAt.After(finished.Add(finishedGrace)) {
				out = append(out, name)
			}
		}
	}
	return out
}

// printScaleSet adds a scale-set run's lines to the report.
func (r *report) printScaleSet(w io.Writer) {
	o := r.obs.scaleSet
	if o == nil {
		return
	}
	fmt.Fprintf(w, "\nscale set %s: %d runner(s) left, %d message(s) never acknowledged; %d assignment(s) taken back and made again\n",
		chaosScaleSet, len(o.runners), o.unacknowledged, r.obs.world.reassignments)
	fmt.Fprintf(w, "jobs canceled for good while assigned: %d; earlier messages delivered again late: %d; machines made for a finished job: %d\n",
		r.obs.world.cancellations, r.obs.world.lateCopies, len(r.madeForFinished()))
	fmt.Fprintf(w, "listener polling again after each restart (first poll answered; limit %s): %s\n", relistenLimit, relistenSummary(r.relisten))
	fmt.Fprintf(w, "Actions service faults armed: %s\n", actionSummary(r.actionsFaults))
	fmt.Fprintf(w, "Actions service answers: %s\n", opSummary(o.calls))
}

func relistenSummary(times []relisten) string {
	if len(times) == 0 {
		return "no restart"
	}
	parts := make([]string, len(times))
	for i, rl := range times {
		if rl.after == notListening {
			parts[i] = fmt.Sprintf("#%d not within its %s (killed again or the run ended)", i+1, round(rl.window))
			continue
		}
		parts[i] = fmt.Sprintf("#%d %s", i+1, round(rl.after))
	}
	return strings.Join(parts, ", ")
}

func opSummary(calls map[scalesettest.Op]map[int]int) string {
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(calls)) {
		parts = append(parts, fmt.Sprintf("%s %s", op, statusSummary(calls[op])))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
