package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/runfleet/runfleet/internal/httpapi"
)

const instancesUsage = `Usage:
  runfleet instances list [--pool POOL] [--json]
  runfleet instances show NAME [--json]
  runfleet instances delete NAME [--force] [--json]

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

func (c *cli) instancesList(ctx context.Context, args []string) int {
	fs := c.newFlags("instances list", "runfleet instances list [--pool POOL] [--json]",
		"Lists the live instances (every status but deleted), of one pool with --pool.")
	var api apiFlags
	api.register(fs, c)
	pool := fs.String("pool", "", "only this pool's instances")
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
	list, err := client.ListInstances(ctx, *pool)
	if err != nil {
		return c.apiFail(err)
	}
	if api.json {
		return c.printJSON(list)
	}
	if len(list) == 0 {
		if *pool != "" {
			fmt.Fprintf(c.stdout, "no live instances in pool %s\n", *pool)
		} else {
			fmt.Fprintln(c.stdout, "no live instances")
		}
		return exitOK
	}
	writeInstanceTable(c.stdout, list, now())
	return exitOK
}

func (c *cli) instancesShow(ctx context.Context, args []string) int {
	fs := c.newFlags("instances show", "runfleet instances show NAME [--json]",
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
	fs := c.newFlags("instances delete", "runfleet instances delete NAME [--force] [--json]", deleteDescription)
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
