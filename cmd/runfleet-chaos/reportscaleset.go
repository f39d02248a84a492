package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
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
		v("%d runner(s) still registered in the scale set", len(o.runners))
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

// printScaleSet adds a scale-set run's lines to the report.
func (r *report) printScaleSet(w io.Writer) {
	o := r.obs.scaleSet
	if o == nil {
		return
	}
	fmt.Fprintf(w, "\nscale set %s: %d runner(s) left, %d message(s) never acknowledged; %d assignment(s) taken back and made again\n",
		chaosScaleSet, len(o.runners), o.unacknowledged, r.obs.world.reassignments)
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
