package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// stallAfter ends settling early once every job is done and nothing at
// all has changed for this long: whatever is left will not go away by
// itself. It outlasts runfleet's slowest recoveries here (a create stuck by
// a kill: the bootstrap timeout plus a minute's grace).
const stallAfter = 2 * time.Minute

// settle waits, faults off, until nothing is left to happen: every job
// done and every delivery answered, no machine in the cloud, no live
// record in runfleet — seen three times in a row. It gives up at ctx's
// deadline or after stallAfter without any change, and says why.
func settle(ctx context.Context, w *world, send *senders, cl externaltest.Config, op *operator) (bool, string) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var (
		quiet      int
		lastSig    string
		lastChange = time.Now()
	)
	for {
		p, st := w.progress(), send.snapshot()
		state, err := cl.Read()
		if err != nil {
			return false, fmt.Sprintf("reading the cloud: %v", err)
		}
		live, apiErr := op.liveInstances(ctx)
		jobsDone := p.pending == 0 && p.queued == 0 && p.running == 0
		if jobsDone && st.outstanding == 0 && p.booting == 0 && len(state.Machines) == 0 && apiErr == nil && len(live) == 0 {
			if quiet++; quiet >= 3 {
				return true, ""
			}
		} else {
			quiet = 0
		}
		var statuses []string
		for _, in := range live {
			statuses = append(statuses, in.Name+"="+string(in.Status)+"/"+string(in.RunnerStatus))
		}
		slices.Sort(statuses)
		sig := fmt.Sprintf("%+v|%d|%d|%d|%s|%v", p, st.outstanding, len(state.Machines), fileSize(cl.EventLog), strings.Join(statuses, ","), apiErr != nil)
		if sig != lastSig {
			lastSig, lastChange = sig, time.Now()
		}
		if jobsDone && st.outstanding == 0 && time.Since(lastChange) > stallAfter {
			return false, fmt.Sprintf("nothing changed for %s: %d machines in the cloud, %d live records", stallAfter, len(state.Machines), len(live))
		}
		select {
		case <-ctx.Done():
			return false, fmt.Sprintf("not quiet by the deadline: %d jobs not done, %d deliveries outstanding, %d machines in the cloud, %d live records (API error: %v)",
				p.pending+p.queued+p.running, st.outstanding, len(state.Machines), len(live), apiErr)
		case <-t.C:
		}
	}
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return fi.Size()
}
