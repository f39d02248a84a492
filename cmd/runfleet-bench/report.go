package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report is everything measured, printed as Markdown.
type report struct {
	settings settings
	started  time.Time
	machine  string
	// pressure is the machine's CPU and IO pressure before and after the
	// runs: these machines are shared, and a busy neighbour shows here.
	pressureBefore, pressureAfter string
	latency                       *latencyResult
	bursts                        []*burstResult
	fleets                        []*fleetRun
	// scaleSetLatency and scaleSetBurst are the runs through a scale set
	// (-scaleset); nil when skipped.
	scaleSetLatency *scaleSetLatency
	scaleSetBurst   *burstResult
	// idleRSS is each child's RSS once healthy, before any job.
	idleRSS  []int64
	problems map[string]int
}

// fleetRun is one replica count on PostgreSQL.
type fleetRun struct {
	replicas int
	latency  *latencyResult
	burst    *burstResult
}

// failed reports whether a one-instance-per-job check failed.
func (r *report) failed() bool {
	bad := func(b *burstResult) bool { return b != nil && !b.check.ok() }
	return slices.ContainsFunc(r.bursts, bad) || slices.ContainsFunc(r.fleets, func(f *fleetRun) bool { return bad(f.burst) }) ||
		bad(r.scaleSetBurst)
}

func (r *report) markdown() string {
	var b strings.Builder
	s := r.settings
	fmt.Fprintf(&b, "## runfleet-bench: embedded mode under load\n\n")
	fmt.Fprintf(&b, "%s; %s.\n", r.started.UTC().Format("2006-01-02 15:04 MST"), r.machine)
	fmt.Fprintf(&b, "`runfleet serve` as a child process on loopback: simulated GitHub, one pool whose simulated provider has zero latency, "+
		"engine.workers %d, info-level JSON logs read by the driver. Webhooks are GitHub-shaped queued deliveries (%s), signed, one distinct job each; "+
		"bursts come from %d concurrent senders over kept-alive connections. The driver runs on the same cores.\n\n", s.workers, s.payload, s.clients)
	if r.pressureBefore != "" {
		fmt.Fprintf(&b, "Machine pressure (Linux PSI some avg60, share of the last 60 s in which a task waited): before the runs %s (neighbours only); after them %s (this run included).\n\n",
			r.pressureBefore, r.pressureAfter)
	}

	if l := r.latency; l != nil {
		fmt.Fprintf(&b, "### Webhook to provider create, %d jobs one at a time\n\n", l.jobs)
		b.WriteString("| measure | p50 | p90 | p99 | max |\n|---|---:|---:|---:|---:|\n")
		latencyRow(&b, "webhook admitted → provider create returned (server's records)", l.admittedToCreated)
		latencyRow(&b, "POST started → provider create returned", l.sentToCreated)
		latencyRow(&b, "POST started → 2xx answer (client)", l.answered)
		b.WriteString("\n")
	}

	if len(r.bursts) > 0 {
		b.WriteString("### Bursts of concurrent queued jobs\n\n")
		b.WriteString("| run | jobs | live before → after | answered/s | all issued in | issued jobs/s | admitted → created p50 / p99 | CPU per job | RSS before → peak | one instance per job |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
		for _, x := range r.bursts {
			peak := mib(x.mem.peak)
			if !x.peakReset {
				peak += " (since start)"
			}
			slices.Sort(x.admittedToCreated)
			fmt.Fprintf(&b, "| %s | %d | %d → %d | %s | %s | %s | %s / %s | %s (driver %s) | %s → %s | %s |\n",
				x.label, x.jobs, x.poolBefore, x.check.live,
				rate(x.jobs, x.acceptedIn), seconds(x.issuedIn), rate(x.jobs, x.issuedIn),
				millis(percentile(x.admittedToCreated, 0.50)), millis(percentile(x.admittedToCreated, 0.99)),
				millis(x.cpu/time.Duration(max(x.jobs, 1))), millis(x.driverCPU/time.Duration(max(x.jobs, 1))),
				mib(x.idleRSS), peak, verdict(x.check))
		}
		b.WriteString("\n")
		b.WriteString("*answered/s*: webhooks answered 2xx per second; *all issued in*: first POST → the last job's provider create returned " +
			"(its running stamp); *CPU per job*: the child's utime+stime (/proc) from the first POST until it was idle again, over jobs, " +
			"and the driver's own beside it; " +
			"*peak*: VmHWM, reset at the burst's start; *one instance per job*: every job has exactly one running instance, " +
			"the live count equals the jobs sent, no GitHub runner id or provider id is shared, no create logged twice.\n\n")
	}
	r.scaleSetMarkdown(&b)
	r.fleetMarkdown(&b)
	if len(r.idleRSS) > 0 {
		parts := make([]string, len(r.idleRSS))
		for i, v := range r.idleRSS {
			parts[i] = mib(v)
		}
		fmt.Fprintf(&b, "Idle RSS of each fresh server once healthy: %s.\n\n", strings.Join(parts, ", "))
	}
	if len(r.problems) > 0 {
		b.WriteString("Warnings and errors the servers logged:\n\n")
		for _, k := range slices.Sorted(maps.Keys(r.problems)) {
			fmt.Fprintf(&b, "- %s ×%d\n", k, r.problems[k])
		}
		b.WriteString("\n")
	}
	return b.String()
}

func latencyRow(b *strings.Builder, name string, d []time.Duration) {
	sorted := slices.Clone(d)
	slices.Sort(sorted)
	fmt.Fprintf(b, "| %s | %s | %s | %s | %s |\n", name,
		millis(percentile(sorted, 0.50)), millis(percentile(sorted, 0.90)),
		millis(percentile(sorted, 0.99)), millis(percentile(sorted, 1)))
}

func verdict(c burstCheck) string {
	if c.ok() {
		return "yes"
	}
	var why []string
	add := func(n int, what string) {
		if n != 0 {
			why = append(why, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(c.sendErrors, "failed deliveries (first: "+c.firstError+")")
	add(c.missing, "jobs without an instance")
	add(c.notRunning, "instances not running")
	add(c.extraForJob, "extra instances for a job")
	if c.live != c.wantLive {
		why = append(why, fmt.Sprintf("%d live instances, want %d", c.live, c.wantLive))
	}
	if !c.idsPerReplica {
		add(c.sharedRunnerIDs, "shared GitHub runner ids")
		add(c.sharedProviderIDs, "shared provider ids")
	}
	if len(c.createdTwice) > 0 {
		why = append(why, "created twice: "+strings.Join(c.createdTwice, ", "))
	}
	if c.scaleSet != nil {
		why = append(why, c.scaleSet.problems()...)
	}
	return "**NO**: " + strings.Join(why, "; ")
}

// percentile is the nearest-rank percentile p (0 < p ≤ 1) of sorted.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(rank, 0)]
}

func millis(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 10:
		return fmt.Sprintf("%.2f ms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	default:
		return fmt.Sprintf("%.2f s", ms/1000)
	}
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func rate(n int, d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(n)/d.Seconds())
}

func mib(bytes int64) string { return fmt.Sprintf("%.0f MiB", float64(bytes)/(1<<20)) }

// describeMachine names what the figures were measured on.
func describeMachine(bin string) string {
	parts := []string{fmt.Sprintf("%d cores", runtime.NumCPU())}
	if model := cpuModel(); model != "" {
		parts[0] += " (" + model + ")"
	}
	if raw, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		parts = append(parts, "Linux "+strings.TrimSpace(string(raw)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, bin, "version").Output(); err == nil {
		parts = append(parts, strings.TrimSpace(string(out)))
	} else {
		parts = append(parts, "driver built with "+runtime.Version())
	}
	return strings.Join(parts, ", ")
}

func cpuModel() string {
	raw, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(raw)) {
		if key, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(key) == "model name" {
			return strings.TrimSpace(value)
		}
	}
	return ""
}

// pressure reads the machine's CPU and IO stall figures (PSI "some avg60"),
// or "" where the kernel has none.
func pressure() string {
	var parts []string
	for _, kind := range []string{"cpu", "io"} {
		raw, err := os.ReadFile("/proc/pressure/" + kind)
		if err != nil {
			return ""
		}
		for field := range strings.FieldsSeq(string(raw)) {
			if v, ok := strings.CutPrefix(field, "avg60="); ok {
				parts = append(parts, kind+" "+v+"%")
				break
			}
		}
	}
	return strings.Join(parts, ", ")
}

// fleetMarkdown is the PostgreSQL replicas' table.
func (r *report) fleetMarkdown(b *strings.Builder) {
	if len(r.fleets) == 0 {
		return
	}
	fmt.Fprintf(b, "### Replicas on PostgreSQL\n\n")
	b.WriteString("Each row is a fresh fleet of `runfleet serve` replicas on one PostgreSQL database (a fresh schema), webhooks spread round robin over them; " +
		"CPU and RSS are the sums over the replicas (the database server's own CPU is not counted). " +
		"Each replica has its own simulated GitHub and provider (zero latency, as above), so the figures are the store's and the queue's cost; " +
		"reconcile passes are an hour apart, so only the pass at start runs (a replica's reconciler would take the others' simulated machines for gone), " +
		"and runner and provider ids repeat across replicas by construction: one instance per job is checked by the records and every replica's create log lines.\n\n")
	b.WriteString("| replicas | admitted → created p50 / p99 (one at a time) | burst jobs | all issued in | issued jobs/s | admitted → created p50 / p99 (burst) | CPU per job | RSS before → peak | one instance per job |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, f := range r.fleets {
		l, x := f.latency, f.burst
		sorted := slices.Clone(l.admittedToCreated)
		slices.Sort(sorted)
		slices.Sort(x.admittedToCreated)
		fmt.Fprintf(b, "| %d | %s / %s | %d | %s | %s | %s / %s | %s | %s → %s | %s |\n",
			f.replicas, millis(percentile(sorted, 0.50)), millis(percentile(sorted, 0.99)),
			x.jobs, seconds(x.issuedIn), rate(x.jobs, x.issuedIn),
			millis(percentile(x.admittedToCreated, 0.50)), millis(percentile(x.admittedToCreated, 0.99)),
			millis(x.cpu/time.Duration(max(x.jobs, 1))), mib(x.idleRSS), mib(x.mem.peak), verdict(x.check))
	}
	b.WriteString("\n")
}
