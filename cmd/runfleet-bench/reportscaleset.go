package main

import (
	"fmt"
	"strings"
	"time"
)

// comparableBurst is the webhook burst to set beside the scale set's: the
// first one of as many jobs on an empty pool (the first of the growing
// bursts, on a fresh server), as the scale set's burst is; nil if none.
func comparableBurst(bursts []*burstResult, jobs int) *burstResult {
	for _, b := range bursts {
		if b.poolBefore == 0 && b.jobs == jobs {
			return b
		}
	}
	return nil
}

// p50p99 is "p50 / p99" of d, or "–" without figures.
func p50p99(d []time.Duration) string {
	if len(d) == 0 {
		return "–"
	}
	s := sortedCopy(d)
	return millis(percentile(s, 0.50)) + " / " + millis(percentile(s, 0.99))
}

// scaleSetMarkdown is the scale-set section: what the figures include,
// the two intakes side by side, then the scale set's runs in full.
func (r *report) scaleSetMarkdown(b *strings.Builder) {
	l, x := r.scaleSetLatency, r.scaleSetBurst
	if l == nil && x == nil {
		return
	}
	b.WriteString("### Scale-set intake\n\n")
	fmt.Fprintf(b, "`runfleet serve` with one scale-set pool (`scale_set: {name: %s}`, the same zero-latency simulated provider, engine.workers %d) "+
		"on a fake GitHub the driver serves on loopback: the REST API (it mints the registration token) and the Actions service "+
		"(internal/github/scaleset/scalesettest: no faults, a %s poll window, up to 50 job events per message). "+
		"Jobs are queued on the scale set as JobAssigned messages, github.com's flow (no acquire). "+
		"*queued → created* starts when the driver queued the job and ends at its instance's running stamp (just after the provider create returned): "+
		"it includes the hand-off to the listener's waiting long poll (or its next poll), the message's decode, the ledger write of each event before it, "+
		"the JIT config from the scale set (one Actions-service call per runner) and the create. "+
		"A message is acknowledged once all its events are in the ledger, so the ack delays the next message's poll, not this message's jobs. "+
		"*admitted → created* starts at the instance record the listener's event made, as the webhook's starts at the one the webhook made.\n\n",
		benchScaleSet, r.settings.workers, scaleSetPollWindow)

	b.WriteString("| intake | one at a time: start → created p50 / p99 | one at a time: admitted → created p50 / p99 | burst jobs | burst issued jobs/s | burst: start → created p50 / p99 | burst: admitted → created p50 / p99 |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|\n")
	var hookLatency, hookAdmitted []time.Duration
	if r.latency != nil {
		hookLatency, hookAdmitted = r.latency.sentToCreated, r.latency.admittedToCreated
	}
	var ssLatency, ssAdmitted []time.Duration
	if l != nil {
		ssLatency, ssAdmitted = l.queuedToCreated, l.admittedToCreated
	}
	jobs := r.settings.burst
	if x != nil {
		jobs = x.jobs
	}
	intakeRow(b, "webhook (start: POST started)", hookLatency, hookAdmitted, comparableBurst(r.bursts, jobs))
	intakeRow(b, "scale set (start: job queued)", ssLatency, ssAdmitted, x)
	b.WriteString("\n")
	b.WriteString("The webhook burst is the first of the growing bursts (a fresh server, an empty pool), sent by " +
		fmt.Sprint(r.settings.clients) + " concurrent senders; the scale set's jobs are all queued at once.\n\n")

	if l != nil {
		fmt.Fprintf(b, "Through the scale set, %d jobs one at a time (each queued once the previous one's instance was running):\n\n", l.jobs)
		b.WriteString("| measure | p50 | p90 | p99 | max |\n|---|---:|---:|---:|---:|\n")
		latencyRow(b, "job queued → instance record stamped (long poll hand-off, decode; the ledger's write commits after)", l.queuedToAdmitted)
		latencyRow(b, "instance record stamped → provider create returned (server's records)", l.admittedToCreated)
		latencyRow(b, "job queued → provider create returned", l.queuedToCreated)
		b.WriteString("\n")
	}
	if x != nil {
		b.WriteString("| run | jobs | all issued in | issued jobs/s | queued → created p50 / p99 | admitted → created p50 / p99 | CPU per job | RSS before → peak | one instance per job |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
		peak := mib(x.mem.peak)
		if !x.peakReset {
			peak += " (since start)"
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s (driver %s) | %s → %s | %s |\n",
			x.label, x.jobs, seconds(x.issuedIn), rate(x.jobs, x.issuedIn),
			p50p99(x.startedToCreated), p50p99(x.admittedToCreated),
			millis(x.cpu/time.Duration(max(x.jobs, 1))), millis(x.driverCPU/time.Duration(max(x.jobs, 1))),
			mib(x.idleRSS), peak, verdict(x.check))
		b.WriteString("\n*all issued in*: the first job queued → the last job's provider create returned; the driver's CPU includes the fake " +
			"GitHub it serves. *one instance per job* adds to the webhook bursts' checks what the fake Actions service says: every message " +
			"acknowledged, exactly one JIT runner registered in the scale set per job, none for another name.\n\n")
	}
}

// intakeRow is one intake's line of the side-by-side table.
func intakeRow(b *strings.Builder, name string, latency, admitted []time.Duration, burst *burstResult) {
	jobs, rateCell, started, burstAdmitted := "–", "–", "–", "–"
	if burst != nil {
		jobs, rateCell = fmt.Sprint(burst.jobs), rate(burst.jobs, burst.issuedIn)
		started, burstAdmitted = p50p99(burst.startedToCreated), p50p99(burst.admittedToCreated)
	}
	fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", name, p50p99(latency), p50p99(admitted), jobs, rateCell, started, burstAdmitted)
}
