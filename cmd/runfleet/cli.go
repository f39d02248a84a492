package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed (server error, unreachable, …)
	exitUsage   = 2 // bad flags or arguments, or an invalid config
)

// cli carries a command's environment, so commands are plain functions a
// test can run in-process.
type cli struct {
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
}

const mainUsage = `runfleet: autoscaler for GitHub Actions self-hosted runners.

Usage:
  runfleet serve --config FILE [--listen HOST:PORT] [--log-level LEVEL] [--log-format text|json]
  runfleet instances list [--pool POOL] [--status S[,S…]] [--all] [-o table|json]
  runfleet instances show NAME [-o table|json]
  runfleet instances delete NAME [--force] [-o table|json]
  runfleet jobs list [--pool POOL] [-o table|json]
  runfleet why JOB [-o table|json]
  runfleet cost [--pool POOL] [--by pool|repository|job|day] [-o table|json]
  runfleet reconcile [-o table|json]
  runfleet webhook send FILE [--secret S] [--server URL | --url URL] [--event EVENT] [--delivery ID] [-o table|json]
  runfleet backup FILE [--server URL] [--token TOKEN] [-o table|json]
  runfleet restore FILE [--store-dir DIR] [-o table|json]
  runfleet provider check --config FILE [--pool NAME] [--settle DURATION] [-o table|json] [--log-level LEVEL]
  runfleet version [-o table|json]
  runfleet cache-agent --config FILE [--listen ADDR] [--socket PATH] | --print-hook
  runfleet help [COMMAND]

serve runs embedded mode: the webhook endpoint, the operator API, the status
page (http://HOST:PORT/), workers and the reconciler in one process. The
instances, jobs, why, cost and reconcile commands operate a running server through its
operator API (backup copies its store), and webhook send delivers to its
/webhook:
  --server URL    server to talk to (env RUNFLEET_SERVER; default ` + defaultServer + `)
  --token TOKEN   the server's operator API token (env RUNFLEET_API_TOKEN)
provider check runs a pool's provider directly, without a server, to vet it.
cache-agent runs on a runner machine, pointing its jobs' actions/cache at
runfleet's cache (docs/actions-cache.md).

-o json prints what a command shows as JSON, for scripts (--json is the same).
Run 'runfleet COMMAND -h' for a command's flags.
Exit status: 0 success, 1 failure, 2 bad usage or invalid configuration.
`

// run is the whole CLI: it returns the process exit status.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c := &cli{getenv: getenv, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		fmt.Fprint(stderr, mainUsage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return c.serve(rest)
	case "instances":
		return c.instances(ctx, rest)
	case "jobs":
		return c.jobs(ctx, rest)
	case "why":
		return c.why(ctx, rest)
	case "cost":
		return c.cost(ctx, rest)
	case "reconcile":
		return c.reconcile(ctx, rest)
	case "webhook":
		return c.webhook(ctx, rest)
	case "provider":
		return c.provider(ctx, rest)
	case "backup":
		return c.backup(ctx, rest)
	case "restore":
		return c.restore(rest)
	case "version", "--version":
		return c.version(rest)
	case "cache-agent":
		return c.cacheAgent(ctx, rest)
	case "help", "-h", "-help", "--help":
		return c.help(rest)
	default:
		fmt.Fprintf(stderr, "runfleet: unknown command %q\n\n%s", cmd, mainUsage)
		return exitUsage
	}
}

func (c *cli) help(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stdout, mainUsage)
		return exitOK
	}
	// Each command prints its own usage for -h; asked for by name, it goes
	// to stdout.
	switch args[0] {
	case "serve", "instances", "jobs", "why", "cost", "reconcile", "webhook", "provider", "backup", "restore", "version", "cache-agent":
		return run(context.Background(), append(args, "-h"), c.getenv, c.stdout, c.stdout)
	default:
		fmt.Fprintf(c.stderr, "runfleet: no help for unknown command %q\n\n%s", args[0], mainUsage)
		return exitUsage
	}
}

// newFlags returns a flag set whose -h prints usage (a one-line synopsis
// and a description) followed by the flags.
func (c *cli) newFlags(name, synopsis, description string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "Usage: %s\n\n%s\n", synopsis, strings.TrimSpace(description))
		var has bool
		fs.VisitAll(func(*flag.Flag) { has = true })
		if has {
			fmt.Fprint(out, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parse parses flags given before, between or after positional arguments
// (the flag package alone stops at the first positional one) and returns
// the positional arguments; everything after "--" is positional. The
// status is exitOK with done set for -h, exitUsage for bad flags.
func parse(fs *flag.FlagSet, args []string) (positional []string, status int, done bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, true
			}
			return nil, exitUsage, true
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, exitOK, false
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), exitOK, false
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// usageError reports a wrong number or kind of arguments.
func (c *cli) usageError(fs *flag.FlagSet, format string, args ...any) int {
	fmt.Fprintf(c.stderr, "runfleet %s: %s\n\n", fs.Name(), fmt.Sprintf(format, args...))
	fs.Usage()
	return exitUsage
}

// fail prints an error and returns exitFailure.
func (c *cli) fail(err error) int {
	fmt.Fprintf(c.stderr, "runfleet: %v\n", err)
	return exitFailure
}

// envOr returns the environment variable's value, or def when unset or empty.
func (c *cli) envOr(name, def string) string {
	if v := c.getenv(name); v != "" {
		return v
	}
	return def
}
