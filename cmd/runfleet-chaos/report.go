package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// report is the run's outcome.
type report struct {
	settings  settings
	dir       string
	started   time.Time
	kills     []killRecord
	dbRestart *dbRecord
	// faults is what each replica kill and the database restart left in
	// creating/deleting, and how long it held it (replicas mode).
	faults      *faultFigures
	chaosEnded  time.Duration
	settleEnded time.Duration
	settled     bool
	settleNote  string
	stopErr     error
	crashes     []*serveRun
	logs        []string
	obs         *observation
	// elapsed is the whole run, from the first arrival to the stop.
	elapsed time.Duration
	// With a scale set: the faults armed in the Actions service, by
	// name, and per kill how long until the listener polled again.
	actionsFaults map[string]int
	relisten      []relisten

	counts     counts
	violations []string
}

// counts are the figures the checks are made of.
type counts struct {
	served0, served1, served2 []int64
	interrupted               []int64
	// canceled are the jobs GitHub canceled for good before any runner
	// took them: not owed a runner.
	canceled    []int64
	twiceLive   []string
	leaked      []externaltest.Machine
	peak        int
	peakAt      time.Time
	outstanding int
}

// listed is how many items of a list a report line names.
const listed = 10

// check computes the counts and names every violation.
func (r *report) check() {
	o, c := r.obs, &r.counts
	for _, j := range o.jobs {
		switch {
		case j.served == 0 && !j.canceledAt.IsZero():
			c.canceled = append(c.canceled, j.id)
		case j.served == 0:
			c.served0 = append(c.served0, j.id)
		case j.served == 1:
			c.served1 = append(c.served1, j.id)
		default:
			c.served2 = append(c.served2, j.id)
		}
		if j.interrupted {
			c.interrupted = append(c.interrupted, j.id)
		}
	}
	c.twiceLive = o.history.TwiceLive
	byName := map[string]int{}
	for _, m := range o.cloud.Machines {
		if byName[m.Instance.Name]++; byName[m.Instance.Name] == 2 && !slices.Contains(c.twiceLive, m.Instance.Name) {
			c.twiceLive = append(c.twiceLive, m.Instance.Name)
		}
	}
	c.leaked = o.cloud.Machines
	for pool, n := range o.history.PeakLive {
		if n > c.peak {
			c.peak, c.peakAt = n, o.history.PeakAt[pool]
		}
	}
	c.outstanding = o.send.outstanding

	v := func(format string, args ...any) { r.violations = append(r.violations, fmt.Sprintf(format, args...)) }
	if len(c.served0) > 0 {
		v("%d job(s) never served: %s", len(c.served0), ids(c.served0))
	}
	if len(c.served2) > 0 {
		v("%d job(s) served 2+ times: %s", len(c.served2), ids(c.served2))
	}
	if len(c.interrupted) > 0 {
		v("%d job(s) interrupted — runfleet deleted the machine of a busy runner: %s", len(c.interrupted), ids(c.interrupted))
	}
	if len(c.twiceLive) > 0 {
		v("%d name(s) carried by two live machines at once: %s", len(c.twiceLive), names(c.twiceLive))
	}
	if len(c.leaked) > 0 {
		v("%d machine(s) leaked (still in the cloud after settling)", len(c.leaked))
	}
	if len(o.live) > 0 {
		v("%d record(s) stuck (live in runfleet after settling)", len(o.live))
	}
	if c.peak > r.settings.maxRunners {
		v("peak of %d live machines exceeds max_runners %d", c.peak, r.settings.maxRunners)
	}
	if len(o.runners) > 0 {
		v("%d runner(s) of ours still registered in GitHub", len(o.runners))
	}
	if c.outstanding > 0 {
		v("%d delivery(ies) never answered 2xx", c.outstanding)
	}
	if un := o.deliveries.unrecovered(); len(un) > 0 {
		v("%d delivery(ies) lost (no attempt delivered) and never recovered from the delivery log: %s", len(un), names(un))
	}
	for _, cr := range r.crashes {
		v("runfleet serve #%d exited by itself: %v (log: %s)", cr.n, cr.waitErr, cr.log)
	}
	if r.stopErr != nil {
		v("graceful stop: %v", r.stopErr)
	}
	r.checkScaleSet(v)
	r.checkFaults(v)
}

func (r *report) print(w io.Writer) {
	s := r.settings
	fmt.Fprintf(w, "\n== runfleet-chaos report ==\n")
	fmt.Fprintf(w, "seed %d; %d jobs queued over %s by %d senders; pool max_runners %d, %d workers; provider faults: %.0f%% fail, %.0f%% hang (for %s); boot failures %.0f%%; GitHub loses %.0f%% of in_progress/completed; %.0f%% redelivered again after a 2xx\n",
		s.seed, s.jobs, s.arrival, s.senders, s.maxRunners, s.workers, 100*s.failRate, 100*s.hangRate, 2*max(bootstrapTimeout, providerTimeout), 100*s.bootFailRate, 100*s.loseRate, 100*s.dupRate)
	fmt.Fprintf(w, "replay: %s\n", s.replay)
	if s.intake == intakeScaleSet {
		fmt.Fprintf(w, "intake: %s (scale set %s on the fake Actions service; no webhooks, so the delivery figures below stay 0)\n", s.intake, chaosScaleSet)
	} else {
		fmt.Fprintf(w, "intake: %s\n", s.intake)
	}
	if s.apps > 1 {
		fmt.Fprintf(w, "%d GitHub Apps installed on the organization: runfleet's and %d extra_apps\n", s.apps, s.apps-1)
	}
	if s.replicas > 1 {
		fmt.Fprintf(w, "%d runfleet serve replicas on one PostgreSQL database; %d kills; webhooks to a replica the load balancer thinks up, at random\n", s.replicas, len(r.kills))
	}
	for i, k := range r.kills {
		what, who := "", fmt.Sprintf("runfleet serve #%d", k.run)
		if k.outage {
			what = "outage: "
		}
		if k.replica != "" {
			who = fmt.Sprintf("replica %s, run #%d", k.replica, k.run)
		}
		fmt.Fprintf(w, "%skill -9 #%d at %s (%s), down %s, healthy again %s after restart\n", what, i+1, round(k.at), who, round(k.downtime), round(k.restartTook))
	}
	if d := r.dbRestart; d != nil {
		fmt.Fprintf(w, "PostgreSQL crashed at %s (immediate shutdown), down %s, accepting connections again %s after restart\n", round(d.at), round(d.downtime), round(d.restartTook))
	} else if s.replicas > 1 && s.dbRestart {
		fmt.Fprintln(w, "PostgreSQL was not restarted: the run ended first")
	}
	r.printFaults(w)
	fmt.Fprintf(w, "chaos ended at %s (faults off); settling ended at %s: ", round(r.chaosEnded), round(r.settleEnded))
	if r.settled {
		fmt.Fprintln(w, "quiet")
	} else {
		fmt.Fprintln(w, r.settleNote)
	}
	if o := r.obs; o != nil {
		c := r.counts
		fmt.Fprintf(w, "\njobs served 0 times: %d %s\n", len(c.served0), ids(c.served0))
		fmt.Fprintf(w, "jobs served 1 time:  %d\n", len(c.served1))
		fmt.Fprintf(w, "jobs served 2+ times: %d %s\n", len(c.served2), ids(c.served2))
		fmt.Fprintf(w, "jobs interrupted (machine deleted mid-job): %d %s\n", len(c.interrupted), ids(c.interrupted))
		fmt.Fprintf(w, "names with two live machines: %d %s\n", len(c.twiceLive), names(c.twiceLive))
		fmt.Fprintf(w, "leaked machines: %d\n", len(c.leaked))
		for i, m := range c.leaked {
			if i == listed {
				fmt.Fprintf(w, "  … %d more\n", len(c.leaked)-listed)
				break
			}
			fmt.Fprintf(w, "  %s (%s, created %s): %s\n", m.Instance.Name, m.Instance.ProviderID, m.CreatedAt.Format(time.TimeOnly), recordNote(o, m))
		}
		fmt.Fprintf(w, "stuck records: %d\n", len(o.live))
		for i, in := range o.live {
			if i == listed {
				fmt.Fprintf(w, "  … %d more\n", len(o.live)-listed)
				break
			}
			fmt.Fprintf(w, "  %s: %s/%s job %d attempts %d since %s; fault %q\n", in.Name, in.Status, in.RunnerStatus, in.JobID, in.Attempts, in.StatusChangedAt.Format(time.TimeOnly), in.ProviderFault)
		}
		fmt.Fprintf(w, "peak live machines: %d (at %s) vs max_runners %d\n", c.peak, c.peakAt.Format(time.TimeOnly), s.maxRunners)
		fmt.Fprintf(w, "our runners left in GitHub: %d\n", len(o.runners))
		fmt.Fprintf(w, "deliveries never answered 2xx: %d\n", c.outstanding)
		fmt.Fprintf(w, "dead-lettered messages (healthz): %d\n", o.deadLetters)

		h := o.history
		fmt.Fprintf(w, "\ncloud: %d creates, %d deletes, %d deletes by name ignored; injected faults: %s\n", h.Creates, h.Deletes, h.IgnoredDeletes, faultSummary(h.Faults))
		ws := o.world
		fmt.Fprintf(w, "machines: %d seen; boots: %d ready, %d refused by runfleet, %d reported failed, %d retried while runfleet was unreachable; %d job starts lost to a vanished runner\n",
			len(o.machines), ws.bootsReady, ws.bootsRefused, ws.bootsFailed, ws.bootRetries, ws.startRaces)
		st := o.send
		fmt.Fprintf(w, "deliveries: %d, plus %d redelivered after a 2xx; %d attempts, %d not answered 2xx; answers %s\n",
			st.deliveries, st.redeliveries, st.attempts, st.refused, statusSummary(st.answered))
		if s.replicas > 1 {
			fmt.Fprintf(w, "answered 2xx by replica: %s\n", actionSummary(st.delivered))
		}
		dl := o.deliveries
		recovered, resent := dl.recoveredLost()
		abandonedWhen := "outage"
		if s.replicas > 1 {
			abandonedWhen = "killed replicas"
		}
		fmt.Fprintf(w, "%s: %d deliveries failed and not resent (%s); the delivery log: %d attempts, %d failed, %d deliveries lost (%s)\n",
			abandonedWhen, total(st.abandoned), actionSummary(st.abandoned), dl.attempts, dl.failed, len(dl.lost), actionSummary(dl.lostByAction()))
		fmt.Fprintf(w, "recovered by runfleet from the delivery log: %d of %d lost, and %d that a resend delivered too; %d deliveries fetched, %d list calls\n",
			recovered, len(dl.lost), resent, dl.fetches, dl.lists)
		fmt.Fprintf(w, "GitHub API calls: %d (%.1f per job): %s\n", o.apiCalls, float64(o.apiCalls)/float64(max(len(o.jobs), 1)), routeSummary(o.githubCalls))
		r.printScaleSet(w)
	}
	if r.elapsed > 0 {
		fmt.Fprintf(w, "elapsed: %s\n", round(r.elapsed))
	}
	files := "driver.log, provider-events.jsonl, cloud-state.json, runfleet.yaml"
	if s.replicas > 1 {
		files = "driver.log, provider-events.jsonl, cloud-state.json, r<N>/runfleet.yaml, postgres/postgres.log"
	}
	fmt.Fprintf(w, "\nfiles: %s (%s)\n", r.dir, files)
	for _, l := range r.logs {
		fmt.Fprintf(w, "  %s\n", l)
	}
	if len(r.violations) == 0 {
		fmt.Fprintln(w, "\nRESULT: no violation")
		return
	}
	fmt.Fprintf(w, "\nRESULT: %d violation(s)\n", len(r.violations))
	for _, v := range r.violations {
		fmt.Fprintf(w, "  - %s\n", v)
	}
}

// recordNote says what runfleet knows of a leaked machine.
func recordNote(o *observation, m externaltest.Machine) string {
	rec, looked := o.records[m.Instance.ProviderID]
	switch {
	case !looked:
		return "record not read"
	case rec == nil:
		return "runfleet has no record of it"
	}
	return fmt.Sprintf("runfleet's record: %s/%s, job %d, provider id %q, fault %q", rec.Status, rec.RunnerStatus, rec.JobID, rec.ProviderID, rec.ProviderFault)
}

func ids(list []int64) string {
	if len(list) == 0 {
		return ""
	}
	parts := make([]string, 0, listed)
	for i, id := range list {
		if i == listed {
			parts = append(parts, fmt.Sprintf("… %d more", len(list)-listed))
			break
		}
		parts = append(parts, fmt.Sprint(id))
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func names(list []string) string {
	if len(list) == 0 {
		return ""
	}
	if len(list) > listed {
		return "(" + strings.Join(list[:listed], ", ") + fmt.Sprintf(", … %d more)", len(list)-listed)
	}
	return "(" + strings.Join(list, ", ") + ")"
}

func faultSummary(f map[string]map[externaltest.Fault]int) string {
	var parts []string
	for _, command := range slices.Sorted(maps.Keys(f)) {
		for _, fault := range slices.Sorted(maps.Keys(f[command])) {
			parts = append(parts, fmt.Sprintf("%s %s ×%d", command, fault, f[command][fault]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func actionSummary(m map[string]int) string {
	var parts []string
	for _, action := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", action, m[action]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func statusSummary(m map[int]int) string {
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d×%d", code, m[code]))
	}
	return strings.Join(parts, " ")
}

func routeSummary(m map[string]int) string {
	var parts []string
	for _, route := range slices.Sorted(maps.Keys(m)) {
		name := route
		if name == "" {
			name = "(unknown route)"
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", name, m[route]))
	}
	return strings.Join(parts, "; ")
}
