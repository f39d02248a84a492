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
queued that no runner has started yet, how long each has waited, and what
each waits for. Run 'runfleet jobs list -h' for flags; 'runfleet why JOB'
says why one job waits.
`

const jobsListDescription = `Lists the open jobs (queued in GitHub, not started on a runner yet) oldest
first, with how long each has waited since GitHub queued it and what it
waits for, in the word 'runfleet why JOB' gives as its reason and the
status page and runfleet_jobs_waiting{reason} show: capacity (its pool is
at max_runners), backoff (its previous runner did not serve it; the next
is made after a delay), next_runner, its runner's stage (runner_creating,
create_backoff, github_budget, runner_booting, runner_online), approval,
unmatched (no pool has its labels: the reason is shown) or
pool_not_configured. Started, finished and expired jobs are not listed.
'runfleet why JOB' tells one job's story.`

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

func writeJobTable(w io.Writer, jobs []httpapi.Job, at time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tPOOL\tREPOSITORY\tSTATUS\tWAITED\tWAITING FOR")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", j.Key(), orDash(j.Pool), orDash(j.Repository), j.Status, age(j.QueuedAt, at), statuspage.WaitingFor(j.Job, j.Wait, at))
	}
	_ = tw.Flush()
}

// jobTotals is the last line: how many open jobs, how many wait for each
// reason (runner.WaitOf's words, counted as the status page and /metrics
// count them), and the longest wait.
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
	counts := map[runner.JobWait]int{}
	var oldest time.Time
	for _, j := range jobs {
		counts[j.Wait]++
		if !j.QueuedAt.IsZero() && (oldest.IsZero() || j.QueuedAt.Before(oldest)) {
			oldest = j.QueuedAt
		}
	}
	var parts []string
	for _, w := range runner.JobWaits {
		if n := counts[w]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, w))
		}
	}
	line += " waiting for: " + strings.Join(parts, ", ")
	if !oldest.IsZero() {
		line += "; longest wait " + age(oldest, at)
	}
	return line
}
