package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/telemetry"
	"github.com/runfleet/runfleet/internal/wiring"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/external/conformance"
)

const providerUsage = `Usage: runfleet provider check --config FILE [--pool NAME] [--settle DURATION] [-o table|json] [--log-level LEVEL]

Runs a pool's provider through the protocol and reports what conforms.
Run 'runfleet provider check -h' for details.
`

const providerCheckDescription = `Runs a pool's provider through the calls runfleet depends on and prints a
checklist of what conforms and what does not: GetVersion (external
providers), CreateInstance, ListInstances by the pool's id (the machine must
be listed), a ListInstances past a tiny timeout (it must be killed),
DeleteInstance by provider id twice (the second finds nothing, which is
success), and DeleteInstance BY NAME of a second machine, as runfleet sends
after a failed create.

Some shortfalls are WARNINGS, not failures, because runfleet survives them:
a DeleteInstance by name that succeeds but leaves the machine running (after
a failed create runfleet must then list the pool and delete by provider id,
and the machine runs, and costs, until that happens, at worst until the
reconciler's next pass), and a GetInstance that does not work (runfleet
never calls it; GARM does).

The machines are made under a fresh pool id, so no running runfleet
installation lists them or mistakes them for its own.

The create request offers the runner downloads GitHub lists for the pool's
owner, as runfleet's creates do (GARM providers install the runner from
them), when the config's GitHub can be asked; when it cannot, the report
says so and the check goes on without them.

Its purpose is vetting a GARM external provider binary (provider type
external) before a pool depends on it; it runs any provider type.

It creates and deletes up to two REAL machines in the pool's cloud, with
unusable metadata URLs and tokens, so they never register a runner. Every
machine it makes is deleted at the end; any it cannot delete is listed.

Exit status: 0 when everything conforms (warnings included), 1 when
anything does not, 2 for bad usage or an invalid config.`

// checkURL is where the check's machines are told to fetch their runner
// config: a reserved name (RFC 2606) that never resolves.
const checkURL = "http://runfleet-provider-check.invalid"

// checkToolsTimeout bounds listing the runner downloads for the check.
const checkToolsTimeout = 30 * time.Second

func (c *cli) provider(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, providerUsage)
		return exitUsage
	}
	switch args[0] {
	case "check":
		return c.providerCheck(ctx, args[1:])
	case "-h", "-help", "--help", "help":
		fmt.Fprint(c.stderr, providerUsage)
		return exitOK
	default:
		fmt.Fprintf(c.stderr, "runfleet provider: unknown subcommand %q\n\n%s", args[0], providerUsage)
		return exitUsage
	}
}

func (c *cli) providerCheck(ctx context.Context, args []string) int {
	fs := c.newFlags("provider check", "runfleet provider check --config FILE [--pool NAME] [--settle DURATION] [-o table|json] [--log-level LEVEL]", providerCheckDescription)
	configPath := fs.String("config", c.getenv("RUNFLEET_CONFIG"), "config file (env RUNFLEET_CONFIG)")
	poolName := fs.String("pool", "", "pool whose provider to check; required when the config has several")
	settle := fs.Duration("settle", 30*time.Second, "how long a deleted machine may still be listed (clouds list terminating machines for a while)")
	asJSON := new(bool)
	addOutputFlags(fs, asJSON)
	// The timeout probe's kill is expected and logged as a warning, so only
	// errors are shown unless asked; debug shows every call with its stderr.
	levelName := fs.String("log-level", "error", "least severe log level written to stderr: debug (every provider call, with its stderr), info, warn or error")
	positional, status, done := parse(fs, args)
	if done {
		return status
	}
	switch {
	case len(positional) > 0:
		return c.usageError(fs, "unexpected argument %q", positional[0])
	case *configPath == "":
		return c.usageError(fs, "--config is required")
	case *settle <= 0:
		return c.usageError(fs, "--settle must be > 0")
	}
	level, err := telemetry.ParseLevel(*levelName)
	if err != nil {
		return c.usageError(fs, "%v", err)
	}
	cfg, err := config.Load(*configPath)
	if err != nil {
		fmt.Fprintf(c.stderr, "runfleet: %v\n", err)
		return exitUsage
	}
	pool, err := choosePool(cfg, *poolName)
	if err != nil {
		return c.usageError(fs, "%v", err)
	}
	// Providers log to the default logger.
	slog.SetDefault(telemetry.NewLogger(c.stderr, level, "controller_id", cfg.ControllerID))
	// Build only this pool's provider: another pool's may not run here.
	// A fresh installation id gives the check's machines a pool id of
	// their own: no running installation's reconciler lists them (their
	// names start with runfleet- like its own), and no store is opened.
	one := *cfg
	one.Pools = []config.Pool{*pool}
	installationID := checkInstallationID()
	provs, err := wiring.Providers(&one, installationID)
	if err != nil {
		fmt.Fprintf(c.stderr, "runfleet: pool %q: %v\n", pool.Name, err)
		return exitUsage
	}

	// An interrupt stops the checks but still lets the clean-up run; a
	// second one exits at once.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	if !*asJSON {
		fmt.Fprintf(c.stdout, "Checking the %s provider of pool %q (as pool id %s): this creates and deletes up to two machines.\n\n",
			pool.Provider.Type, pool.Name, runner.PoolID(installationID, pool.Name))
	}
	template := checkTemplate(pool)
	var toolsNote string
	template.RunnerDownloads, toolsNote = checkRunnerDownloads(ctx, &one, pool)
	report := conformance.Run(ctx, provs[pool.Name], conformance.Options{
		Pool:          pool.Name,
		PoolID:        runner.PoolID(installationID, pool.Name),
		Template:      template,
		CreateTimeout: pool.BootstrapTimeout,
		Settle:        *settle,
	})
	if toolsNote != "" {
		report.Notes = append(report.Notes, toolsNote)
	}
	if *asJSON {
		if code := c.printJSON(report); code != exitOK {
			return code
		}
	} else {
		writeCheckReport(c, report)
	}
	if !report.OK() {
		return exitFailure
	}
	return exitOK
}

// checkInstallationID is an installation id no store holds, fresh for
// each check.
func checkInstallationID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "provider-check-" + hex.EncodeToString(b)
}

// choosePool finds the named pool, or the only one.
func choosePool(cfg *config.Config, name string) (*config.Pool, error) {
	var names []string
	for i := range cfg.Pools {
		if name != "" && cfg.Pools[i].Name == name {
			return &cfg.Pools[i], nil
		}
		names = append(names, cfg.Pools[i].Name)
	}
	switch {
	case name != "":
		return nil, fmt.Errorf("no pool %q in the config (pools: %s)", name, strings.Join(names, ", "))
	case len(cfg.Pools) == 1:
		return &cfg.Pools[0], nil
	}
	return nil, fmt.Errorf("the config has %d pools: choose one with --pool (%s)", len(cfg.Pools), strings.Join(names, ", "))
}

// checkTemplate is what the check's machines are created with: the pool's
// own labels and group, and URLs and a token that lead nowhere.
func checkTemplate(pool *config.Pool) providers.CreateRequest {
	req := providers.CreateRequest{
		Labels:           pool.Labels,
		RunnerGroup:      pool.RunnerGroup,
		MetadataURL:      checkURL + "/metadata",
		CallbackURL:      checkURL + "/callbacks",
		InstanceToken:    "runfleet-provider-check-not-a-token",
		JITConfigEnabled: true,
	}
	if o, err := github.ParseOwner(pool.Owner); err == nil {
		switch {
		case o.Enterprise != "":
			req.RepoURL = "https://github.com/enterprises/" + o.Enterprise
		case o.Repo != "":
			req.RepoURL = "https://github.com/" + o.Org + "/" + o.Repo
		default:
			req.RepoURL = "https://github.com/" + o.Org
		}
	}
	return req
}

// checkRunnerDownloads lists the runner downloads GitHub offers the pool's owner and
// converts them as the engine does, so a provider that installs the runner
// from them (every GARM provider) is checked as it will run. A GitHub that
// cannot be asked does not stop the check: the note says why the create
// request carries no downloads, since a provider that needs one then fails
// the create check for a reason that is not its own.
func checkRunnerDownloads(ctx context.Context, cfg *config.Config, pool *config.Pool) (tools []providers.RunnerDownload, note string) {
	const without = "the create request offered no runner downloads (providers that need one fail the create check; pin them with the provider's tools setting)"
	owner, err := github.ParseOwner(pool.Owner)
	if err != nil {
		return nil, fmt.Sprintf("%s: pool owner: %v", without, err)
	}
	gh, err := wiring.GitHub(cfg, slog.Default(), nil)
	if err != nil {
		return nil, fmt.Sprintf("%s: GitHub is not usable: %v", without, err)
	}
	ctx, cancel := context.WithTimeout(ctx, checkToolsTimeout)
	defer cancel()
	downloads, err := gh.RunnerDownloads(ctx, owner)
	if err != nil {
		return nil, fmt.Sprintf("%s: listing %s's runner downloads failed: %v", without, owner, err)
	}
	return engine.ProviderRunnerDownloads(downloads), ""
}

func writeCheckReport(c *cli, r conformance.Report) {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	for _, res := range r.Results {
		detail := res.Detail
		if res.Took > 0 {
			detail = strings.TrimSpace(fmt.Sprintf("%s (%s)", detail, res.Took.Round(time.Millisecond)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", strings.ToUpper(string(res.Status)), res.Check, truncate(detail, 500))
	}
	_ = tw.Flush()
	for _, l := range r.Leftovers {
		fmt.Fprintf(c.stdout, "LEFT BEHIND: %s\n", l)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(c.stdout, "NOTE: %s\n", n)
	}
	fmt.Fprintf(c.stdout, "\n%d passed, %d warned, %d failed, %d skipped",
		r.Count(conformance.Pass), r.Count(conformance.Warn), r.Count(conformance.Fail), r.Count(conformance.Skip))
	if len(r.Leftovers) > 0 {
		fmt.Fprintf(c.stdout, ", %d machines left behind", len(r.Leftovers))
	}
	switch {
	case !r.OK():
		fmt.Fprintln(c.stdout, ": the provider does NOT conform.")
	case r.Count(conformance.Warn) > 0:
		fmt.Fprintln(c.stdout, ": the provider conforms; read the warnings for what they cost.")
	default:
		fmt.Fprintln(c.stdout, ": the provider conforms.")
	}
}
