package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/statuspage"
)

const jobsUsage = `Usage:
  runfleet jobs list [--pool POOL] [-o table|json]

Lists the open demand of a running runfleet server: the jobs GitHub has
queued that no runner has started yet, how long each has waited, and which
are waiting for capacity or match no pool. Run 'runfleet jobs list -h' for
flags; 'runfleet why JOB' says why one job waits.
`

const jobsListDescription = `Lists the open jobs (queued in GitHub, not started on a runner yet) oldest
first, with how long each has waited since GitHub queued it and what it
waits for: capacity (its pool is at max_runners, or its next runner is
backing off), the runner being made for it, an environment's approval, or
a pool (no pool has its labels: the reason is shown). Started, finished and
expired jobs are not listed. 'runfleet why JOB' tells one job's story.`

func (c *cli) jobs(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, jobsUsage)
		return exitUsage
	}
	switch args[0] {
	case "list", "ls":
		return c.jobsList(ctx, args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprint(c.stderr, jobsUsage)
		return exitOK
	default:
		fmt.Fprintf(c.stderr, "runfleet jobs: unknown command %q\n\n%s", args[0], jobsUsage)
		return exitUsage
	}
}

func (c *cli) jobsList(ctx context.Context, args []string) int {
	fs := c.newFlags("jobs list", "runfleet jobs list [--pool POOL] [-o table|json]", jobsListDescription)
	var api apiFlags
	api.register(fs, c)
	pool := fs.String("pool", "", "only this pool's jobs")
	positional, status, done := parse(fs, args)
	if done {
		return status
	}
	if len(positional) > 0 {
		return c.usageError(fs, "unexpected argument %q", positional[0])
	}
	client, err := api.client(c)
	if err != nil {
		return c.usageError(fs, "%v", err)
	}
	jobs, err := client.ListOpenJobs(ctx, *pool)
	if err != nil {
		return c.apiFail(err)
	}
	if api.json {
		return c.printJSON(jobs)
	}
	at := now()
	if len(jobs) > 0 {
		writeJobTable(c.stdout, jobs, at)
	}
	fmt.Fprintln(c.stdout, jobTotals(jobs, *pool, at))
	return exitOK
}

// waitingFor says what an open job waits for, as the table's WAITING
// FOR: the server's verdict (runner.WaitOf, the one definition the status
// page and /metrics count with), with the detail the record adds.
func waitingFor(j httpapi.Job, at time.Time) string {
	switch j.Wait {
	case runner.WaitApproval:
		return "approval"
	case runner.WaitUnmatched:
		return "no pool: " + j.UnmatchedDetail
	case runner.WaitRunner:
		return "runner " + j.Instance
	}
	if j.NextAttemptAt.After(at) {
		return "capacity (next runner " + statuspage.Relative(j.NextAttemptAt, at) + ")"
	}
	return "capacity"
}

func writeJobTable(w io.Writer, jobs []httpapi.Job, at time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tPOOL\tREPOSITORY\tSTATUS\tWAITED\tWAITING FOR")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", j.Key(), orDash(j.Pool), orDash(j.Repository), j.Status, age(j.QueuedAt, at), waitingFor(j, at))
	}
	_ = tw.Flush()
}

// jobTotals is the last line: how many open jobs, how many wait for
// capacity (counted as the status page and /metrics count them), how
// many match no pool, and the longest wait.
func jobTotals(jobs []httpapi.Job, pool string, at time.Time) string {
	line := plural(len(jobs), "open job")
	if len(jobs) == 0 {
		line = "no open jobs"
	}
	if pool != "" {
		line += " in pool " + pool
	}
	if len(jobs) == 0 {
		return line
	}
	var parts []string
	counts := map[runner.JobWait]int{}
	var oldest time.Time
	for _, j := range jobs {
		counts[j.Wait]++
		if !j.QueuedAt.IsZero() && (oldest.IsZero() || j.QueuedAt.Before(oldest)) {
			oldest = j.QueuedAt
		}
	}
	parts = append(parts, fmt.Sprintf("%d waiting for capacity", counts[runner.WaitCapacity]))
	if n := counts[runner.WaitApproval]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting for approval", n))
	}
	if n := counts[runner.WaitUnmatched]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d matching no pool", n))
	}
	if !oldest.IsZero() {
		parts = append(parts, "longest wait "+age(oldest, at))
	}
	return line + ": " + strings.Join(parts, ", ")
}
