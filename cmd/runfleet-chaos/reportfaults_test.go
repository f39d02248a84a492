package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The fault checks: an instance taken over or moved on past 30 s is a
// violation, unless a later fault killed the replica that took it over
// (then only its takeover counts here); the reconciler lease past its
// TTL is one; the pool held full by dead work past 30 s is one.
func TestCheckFaultsNamesWorkHeldPastTheBound(t *testing.T) {
	at := time.Date(2026, 12, 7, 7, 0, 0, 0, time.UTC)
	held := func(name string, taken, moved time.Duration) *heldInstance {
		return &heldInstance{name: name, status: "creating", takenAt: taken, movedOnAt: moved}
	}
	r := &report{faults: &faultFigures{
		watches: []faultWatch{
			{what: "kill -9 #1", at: at, held: []*heldInstance{
				held("quick", 14*time.Second, 16*time.Second),
				held("slow-takeover", 31*time.Second, 31*time.Second),
				held("never", -1, -1),
				held("taker-killed", 15*time.Second, 40*time.Second),
				held("slow-clean-up", 15*time.Second, 35*time.Second),
			}, leaseHeld: true, leaseMoved: 95 * time.Second, leaseTTL: 90 * time.Second},
			{what: "kill -9 #2", at: at.Add(20 * time.Second), held: []*heldInstance{
				held("taker-killed", 14*time.Second, 20*time.Second),
			}},
		},
		fullLongest: 31 * time.Second,
	}}
	var v []string
	r.checkFaults(func(format string, args ...any) { v = append(v, fmt.Sprintf(format, args...)) })
	all := strings.Join(v, "\n")
	for _, want := range []string{"slow-takeover", "never", "slow-clean-up", "reconciler lease", "pool was held full"} {
		if !strings.Contains(all, want) {
			t.Errorf("no violation names %q:\n%s", want, all)
		}
	}
	for _, not := range []string{"quick", "taker-killed"} {
		if strings.Contains(all, not) {
			t.Errorf("a violation names %q:\n%s", not, all)
		}
	}
	if len(v) != 5 {
		t.Errorf("%d violations, want 5:\n%s", len(v), all)
	}
}
