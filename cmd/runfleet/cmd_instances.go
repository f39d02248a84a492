package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/runfleet/runfleet/internal/httpapi"
	"github.com/runfleet/runfleet/internal/runner"
)

const instancesUsage = `Usage:
  runfleet instances list [--pool POOL] [--status S[,S…]] [--all] [-o table|json]
  runfleet instances show NAME [-o table|json]
  runfleet instances delete NAME [--force] [-o table|json]

Lists, shows and deletes the instances (runner machines) of a running
runfleet server through its operator API. Run 'runfleet instances COMMAND -h'
for a command's flags.
`

func (c *cli) instances(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, instancesUsage)
		return exitUsage
	}
	switch args[0] {
	case "list", "ls":
		return c.instancesList(ctx, args[1:])
	case "show", "get":
		return c.instancesShow(ctx, args[1:])
	case "delete", "rm":
		return c.instancesDelete(ctx, args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprint(c.stderr, instancesUsage)
		return exitOK
	default:
		fmt.Fprintf(c.stderr, "runfleet instances: unknown command %q\n\n%s", args[0], instancesUsage)
		return exitUsage
	}
}

const instancesListDescription = `Lists the instances of a running server, one line each, and a totals line.

By default the instances on their way out (pending_delete,
pending_force_delete, deleting) are left out and counted in the totals;
--all lists every live status and, after them, the deleted instances whose
records the server still keeps (7 days), most recently deleted first.
--status deleted lists only those. The totals count deleted ones apart.`

func (c *cli) instancesList(ctx context.Context, args []string) int {
	fs := c.newFlags("instances list", "runfleet instances list [--pool POOL] [--status S[,S…]] [--all] [-o table|json]", instancesListDescription)
	var api apiFlags
	api.register(fs, c)
	pool := fs.String("pool", "", "only this pool's instances")
	statusList := fs.String("status", "", "only instances in these statuses, comma-separated (e.g. error,creating)")
	all := fs.Bool("all", false, "every live status, those on their way out included, and the deleted instances kept (7 days)")
	positional, status, done := parse(fs, args)
	if done {
		return status
	}
	if len(positional) > 0 {
		return c.usageError(fs, "unexpected argument %q", positional[0])
	}
	statuses, err := parseStatusList(*statusList)
	if err != nil {
		return c.usageError(fs, "--status: %v", err)
	}
	client, err := api.client(c)
	if err != nil {
		return c.usageError(fs, "%v", err)
	}
	list, err := client.ListInstancesWhere(ctx, httpapi.InstanceFilter{Pool: *pool, Statuses: statuses, Deleted: *all})
	if err != nil {
		var apiErr *httpapi.Error
		if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotImplemented {
			err = fmt.Errorf("%w\n(read a deleted instance with 'runfleet instances show NAME')", err)
		}
		return c.apiFail(err)
	}
	// Asked for by status, an instance is shown whatever that status is.
	var hidden int
	if !*all && len(statuses) == 0 {
		shown := list[:0:0]
		for _, in := range list {
			if leaving(in.Status) {
				hidden++
				continue
			}
			shown = append(shown, in)
		}
		list = shown
	}
	if api.json {
		return c.printJSON(list)
	}
	if len(list) > 0 {
		writeInstanceTable(c.stdout, list, now())
	}
	fmt.Fprintln(c.stdout, instanceTotals(list, hidden, *pool, *statusList, deletedViewOf(*all, statuses)))
	return exitOK
}

// deletedView is what a listing says about deleted instances.
type deletedView int

const (
	deletedNotAsked deletedView = iota
	deletedToo                  // live and deleted ones were asked for
	deletedOnly                 // --status deleted
)

func deletedViewOf(all bool, statuses []runner.Status) deletedView {
	switch {
	case len(statuses) > 0 && !slices.ContainsFunc(statuses, runner.Status.Live):
		return deletedOnly
	case slices.Contains(statuses, runner.StatusDeleted), all && len(statuses) == 0:
		return deletedToo
	default:
		return deletedNotAsked
	}
}

// leaving reports whether an instance is on its way out: listed only with
// --all or by status.
func leaving(s runner.Status) bool {
	return s.PendingDeletion() || s == runner.StatusDeleting
}

// parseStatusList reads --status.
func parseStatusList(v string) ([]runner.Status, error) { return runner.ParseStatuses(v) }

// instanceTotals is the last line of a listing: how many live ones, by
// status in lifecycle order, how many deleted ones when they were asked
// for, and how many were left out.
func instanceTotals(list []*runner.Instance, hidden int, pool, statuses string, deleted deletedView) string {
	counts := map[runner.Status]int{}
	live := 0
	for _, in := range list {
		counts[in.Status]++
		if in.Status.Live() {
			live++
		}
	}
	gone := counts[runner.StatusDeleted]
	where := ""
	if pool != "" {
		where = " in pool " + pool
	}
	if deleted == deletedOnly {
		kept := " (records are kept " + httpapi.DeletedRetentionText() + ")"
		if gone == 0 {
			return "no deleted instances" + where + kept
		}
		return plural(gone, "deleted instance") + where + kept
	}
	var parts []string
	for _, s := range runner.AllStatuses {
		if counts[s] > 0 && s.Live() {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	line := plural(live, "instance")
	if live == 0 {
		line = "no live instances"
	}
	line += where
	if statuses != "" {
		line += " in status " + statuses
	}
	if len(parts) > 0 {
		line += ": " + strings.Join(parts, ", ")
	}
	if deleted == deletedToo {
		n := "none"
		if gone > 0 {
			n = fmt.Sprint(gone)
		}
		line += fmt.Sprintf("; %s deleted in the last %s", n, httpapi.DeletedRetentionText())
	}
	if hidden > 0 {
		line += fmt.Sprintf(" (%d on their way out not shown; --all shows them)", hidden)
	}
	return line
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func (c *cli) instancesShow(ctx context.Context, args []string) int {
	fs := c.newFlags("instances show", "runfleet instances show NAME [-o table|json]",
		"Shows one instance in full, deleted ones included while their record is kept (7 days).")
	var api apiFlags
	api.register(fs, c)
	name, client, status, done := c.oneInstance(fs, &api, args)
	if done {
		return status
	}
	inst, err := client.GetInstance(ctx, name)
	if err != nil {
		return c.apiFail(err)
	}
	if api.json {
		return c.printJSON(inst)
	}
	writeInstanceDetail(c.stdout, inst, now())
	return exitOK
}

const deleteDescription = `Deletes an instance: its runner is removed from GitHub, then its machine from
the provider, by the server's workers. It works from any state, a stuck
creating or deleting included.

Without --force, a runner GitHub reports as running a job is not touched and
the command fails; wait for the job or use --force. With --force the delete
completes even if GitHub or the provider keeps failing (the failure is
recorded on the instance); check the provider for a leftover machine then.`

func (c *cli) instancesDelete(ctx context.Context, args []string) int {
	fs := c.newFlags("instances delete", "runfleet instances delete NAME [--force] [-o table|json]", deleteDescription)
	var api apiFlags
	api.register(fs, c)
	force := fs.Bool("force", false, "delete even a busy runner, and finish even when GitHub or the provider fails")
	name, client, status, done := c.oneInstance(fs, &api, args)
	if done {
		return status
	}
	inst, err := client.DeleteInstance(ctx, name, *force)
	if err != nil {
		return c.apiFail(err)
	}
	if api.json {
		return c.printJSON(inst)
	}
	if !inst.Status.Live() {
		fmt.Fprintf(c.stdout, "instance %s is deleted\n", inst.Name)
		return exitOK
	}
	fmt.Fprintf(c.stdout, "instance %s: delete accepted, status %s; follow it with: runfleet instances show %s\n", inst.Name, inst.Status, inst.Name)
	return exitOK
}

// oneInstance parses a command that takes exactly one instance name.
func (c *cli) oneInstance(fs *flag.FlagSet, api *apiFlags, args []string) (string, *httpapi.Client, int, bool) {
	positional, status, done := parse(fs, args)
	if done {
		return "", nil, status, true
	}
	if len(positional) != 1 || positional[0] == "" {
		return "", nil, c.usageError(fs, "want exactly one instance NAME, got %d arguments", len(positional)), true
	}
	client, err := api.client(c)
	if err != nil {
		return "", nil, c.usageError(fs, "%v", err), true
	}
	return positional[0], client, exitOK, false
}
