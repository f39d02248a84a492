package main

import (
	"fmt"
	"io"
	"time"
)

// printFaults reports, per fault, what it left in creating/deleting and
// how long each took to move on, then the distribution over the run, the
// longest the pool was held full meanwhile, and the reconciler lease's
// moves.
func (r *report) printFaults(w io.Writer) {
	f := r.faults
	if f == nil {
		return
	}
	for _, fw := range f.watches {
		var took []string
		for _, h := range fw.held {
			switch {
			case h.movedOnAt < 0:
				took = append(took, fmt.Sprintf("%s %s: not moved on", h.name, h.status))
			case h.takenAt < h.movedOnAt:
				took = append(took, fmt.Sprintf("%s %s (taken over after %s)", h.status, round(h.movedOnAt), round(h.takenAt)))
			default:
				took = append(took, fmt.Sprintf("%s %s", h.status, round(h.movedOnAt)))
			}
		}
		fmt.Fprintf(w, "  %s: %d instance(s) left in creating/deleting; moved on after %v", fw.what, len(fw.held), took)
		if fw.leaseHeld {
			if fw.leaseMoved < 0 {
				fmt.Fprintf(w, "; held the reconciler lease: not taken over")
			} else {
				fmt.Fprintf(w, "; held the reconciler lease: taken over after %s (bound %s)", round(fw.leaseMoved), fw.leaseTTL)
			}
		}
		fmt.Fprintln(w)
	}
	d, tk := f.movedOn(), f.takenOver()
	if len(d) == 0 {
		fmt.Fprintln(w, "no fault left an instance in creating/deleting")
	} else {
		fmt.Fprintf(w, "time to take over after a fault, %d instances: min %s, median %s, p90 %s, max %s (bound %s)\n",
			len(tk), round(tk[0]), round(tk[len(tk)/2]), round(tk[len(tk)*9/10]), round(tk[len(tk)-1]), maxHeldByFault)
		fmt.Fprintf(w, "time to move on (another status) after a fault: min %s, median %s, p90 %s, max %s (bound %s, unless a later fault killed the replica that took it over)\n",
			round(d[0]), round(d[len(d)/2]), round(d[len(d)*9/10]), round(d[len(d)-1]), maxHeldByFault)
	}
	fmt.Fprintf(w, "longest the pool was full while a fault's instance was not yet taken over: %s (bound %s)\n", round(f.fullLongest), maxHeldByFault)
}

// checkFaults names the faults whose work was held past the bounds.
func (r *report) checkFaults(v func(format string, args ...any)) {
	f := r.faults
	if f == nil {
		return
	}
	for i, fw := range f.watches {
		for _, h := range fw.held {
			// Taken over by a live replica within the bound; moved on
			// within it too, unless a later fault killed the replica that
			// took it over (that fault's own watch then holds it).
			if h.takenAt < 0 || h.takenAt > maxHeldByFault ||
				(h.movedOnAt < 0 || h.movedOnAt > maxHeldByFault) && !f.heldLater(i, h.name) {
				v("%s: %s held in %s for %s, taken over after %s (bound %s)", fw.what, h.name, h.status, heldFor(h.movedOnAt), heldFor(h.takenAt), maxHeldByFault)
			}
		}
		// The lease is taken at its expiry: within its TTL of the death,
		// plus the standby's round trip to the database.
		if fw.leaseHeld && (fw.leaseMoved < 0 || fw.leaseMoved > fw.leaseTTL+time.Second) {
			v("%s: the reconciler lease moved after %s, past its bound %s", fw.what, heldFor(fw.leaseMoved), fw.leaseTTL)
		}
	}
	if f.fullLongest > maxHeldByFault {
		v("the pool was held full for %s while work a fault left had not moved on (bound %s)", round(f.fullLongest), maxHeldByFault)
	}
}

func heldFor(d time.Duration) string {
	if d < 0 {
		return fmt.Sprintf("%s+ (never moved on)", trackFor)
	}
	return round(d).String()
}

// heldLater reports whether a fault after watch i found instance name
// held too: the replica that took it over was killed in its turn.
func (f *faultFigures) heldLater(i int, name string) bool {
	for _, w := range f.watches {
		if !w.at.After(f.watches[i].at) {
			continue
		}
		for _, h := range w.held {
			if h.name == name {
				return true
			}
		}
	}
	return false
}
