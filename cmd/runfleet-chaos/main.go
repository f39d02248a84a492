// Command runfleet-chaos is the driver behind `make chaos`: it runs the real
// `runfleet serve` as a child process against a fake GitHub it serves itself
// (internal/github/githubtest, on loopback; runfleet authenticates as a
// GitHub App) and an external GARM provider whose machines live in a file
// (./provider), then plays GitHub and the machines: signed workflow_job
// webhooks from concurrent senders that redeliver until answered 2xx, each
// attempt logged in the App's webhook delivery log as GitHub logs it,
// machines that boot through runfleet's metadata endpoints and run jobs.
// Meanwhile the provider fails or hangs on a seeded share of calls and the
// driver kills runfleet with SIGKILL at seeded moments, restarting it on the
// same state; one of the kills is an outage (a minute by default) during
// which the senders play GitHub exactly and never resend a failed delivery,
// so runfleet must recover those from the delivery log. At the end it turns
// the faults off, lets everything settle and counts what must never happen:
// jobs served zero or two times, a name on two live machines, machines
// leaked, records stuck, more live machines than max_runners, a lost
// delivery runfleet never recovered. Any of them fails the run (exit 1). It
// talks to nothing but 127.0.0.1.
//
// With -replicas N (N ≥ 2, `make chaos-replicas`) runfleet is N serve
// replicas on one PostgreSQL server the driver starts: webhooks go to a
// replica a load balancer thinks up, replicas are killed one at a time
// (never the last one up) and restarted, the database crashes and
// restarts once, and a delivery that failed because its replica was killed
// is never resent: runfleet must recover it from the delivery log. The
// checks are the same, over all replicas.
//
// With -intake scaleset (`make chaos-scaleset`) the pool is a scale-set
// pool: the driver's GitHub also serves the fake Actions service
// (scalesettest) behind the same API root, jobs are queued into the scale
// set instead of sent as webhooks, and the scale set's own runners take
// them. The service misbehaves at moderate rates (actionsfaults.go) and
// each kill -9 of serve kills its listener too: the report says, per
// restart, how long until the listener polled again (at most 60 s).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/runfleet/runfleet/internal/config"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// settings are the driver's flags.
type settings struct {
	bin          string
	provider     string
	out          string
	seed         uint64
	jobs         int
	kills        int
	outage       time.Duration
	timeout      time.Duration
	arrival      time.Duration
	senders      int
	workers      int
	maxRunners   int
	failRate     float64
	hangRate     float64
	bootFailRate float64
	loseRate     float64
	dupRate      float64
	ignoreByName bool
	logLevel     string
	reconcile    time.Duration
	// replicas ≥ 2 runs that many serve replicas on one PostgreSQL
	// database the driver starts; 1 is one serve on its bbolt store.
	replicas  int
	dbRestart bool
	// defaults serves with runfleet's default timings (no engine
	// timing, no pool timeout set) and no hung provider calls.
	defaults bool
	// apps is how many GitHub Apps runfleet spreads its calls over.
	apps int
	// intake is how jobs reach runfleet: intakeWebhook or intakeScaleSet.
	intake string
	// actionsFaults arms the Actions service's faults and GitHub's
	// re-assignments (-intake scaleset).
	actionsFaults bool
	// replay is the command line that repeats this run's schedule.
	replay string
}

// defaultReplicaKills is -kills with -replicas.
const defaultReplicaKills = 6

// Timeouts the served pool is configured with: short, so hung provider
// calls and machines that never boot are dealt with inside the run.
const (
	bootstrapTimeout = 20 * time.Second
	providerTimeout  = 10 * time.Second
)

func run(args []string, stdout, stderr io.Writer) int {
	// Progress, kills and the report's warnings are written from several
	// goroutines: one line at a time, whatever stderr is.
	stderr = &lockedWriter{w: stderr}
	fs := flag.NewFlagSet("runfleet-chaos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s settings
	fs.StringVar(&s.bin, "bin", "bin/runfleet", "the runfleet binary under test (make builds it)")
	fs.StringVar(&s.provider, "provider", "", "the fake GARM provider executable (default: go build ./providers/external/externaltest/fakeprovider into -out)")
	fs.StringVar(&s.out, "out", "", "directory for configs, state and logs (default: a new temporary directory, kept)")
	fs.Uint64Var(&s.seed, "seed", 0, "seed of every random choice (0: pick one and print it)")
	fs.IntVar(&s.jobs, "jobs", 350, "workflow jobs to run (GitHub's budget paces runfleet to about 70 jobs a minute: see docs/reliability.md)")
	fs.IntVar(&s.kills, "kills", 4, "times runfleet is killed with SIGKILL (and restarted on the same state)")
	fs.DurationVar(&s.outage, "outage", 60*time.Second, "one more kill -9 with this long a downtime, early in the arrivals: deliveries failed meanwhile are not resent, runfleet must recover them from GitHub's delivery log (0: none)")
	fs.DurationVar(&s.timeout, "timeout", 10*time.Minute, "bound on the whole run")
	fs.DurationVar(&s.arrival, "arrival", 0, "jobs are queued over this long (default: 400ms per job, at most 3m)")
	fs.IntVar(&s.senders, "senders", 16, "concurrent webhook senders")
	fs.IntVar(&s.workers, "workers", 8, "engine.workers of the served config")
	fs.IntVar(&s.maxRunners, "max-runners", 24, "max_runners of the served pool")
	fs.Float64Var(&s.failRate, "fail-rate", 0.30, "share of provider creates and deletes that fail")
	fs.Float64Var(&s.hangRate, "hang-rate", 0.02, "share of provider creates and deletes that hang past runfleet's timeout")
	fs.Float64Var(&s.bootFailRate, "boot-fail-rate", 0.02, "share of machines whose boot reports failed")
	fs.Float64Var(&s.loseRate, "lose-rate", 0.01, "share of in_progress and of completed deliveries GitHub never sends")
	fs.Float64Var(&s.dupRate, "dup-rate", 0.05, "share of answered deliveries sent once more later (a manual redelivery)")
	fs.DurationVar(&s.reconcile, "reconcile-interval", 2*time.Second, "engine.reconcile_interval of the served config")
	fs.StringVar(&s.logLevel, "log-level", "info", "runfleet serve's --log-level (debug logs every provider call)")
	fs.BoolVar(&s.ignoreByName, "ignore-delete-by-name", false, "the provider answers deletes by name with success and keeps the machine")
	fs.IntVar(&s.replicas, "replicas", 1, "runfleet serve replicas; 2 or more run them on one PostgreSQL database the driver starts, kill -9 one at a time (never the last one up; -kills defaults to 6) and send each webhook to one that is up, and a delivery that fails because its replica was killed is not resent (no -outage)")
	fs.IntVar(&s.apps, "apps", 1, "GitHub Apps installed on the organization; runfleet uses the others as github.extra_apps, each with a budget of its own, so 2 serve jobs about twice as fast (see docs/reliability.md)")
	fs.StringVar(&s.intake, "intake", intakeWebhook, "how jobs reach runfleet: webhook (workflow_job deliveries) or scaleset (a scale-set pool whose listener long-polls GitHub's Actions service, with that service's faults; no -outage by default)")
	fs.BoolVar(&s.actionsFaults, "actions-faults", true, "with -intake scaleset: the Actions service's faults (5xx, slow answers, messages twice, failed acks) and GitHub's re-assignments of 10% of the jobs")
	fs.BoolVar(&s.defaults, "defaults", false, "serve with runfleet's default engine timings (engine.reconcile_interval, delete_backoff_min/max, visibility_timeout, takeover_grace) instead of the short ones, and report what each fault held against issue #32's 30 s bound; -hang-rate defaults to 0 then (a hung call is a live process stuck, the timeouts' business, not dead work)")
	fs.BoolVar(&s.dbRestart, "db-restart", true, "with -replicas: crash PostgreSQL (immediate shutdown) once mid-run and restart it on its data")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if s.replicas > 1 {
		if !set["kills"] {
			s.kills = defaultReplicaKills
		}
		if !set["outage"] {
			s.outage = 0
		}
	}
	if s.defaults {
		if !set["hang-rate"] {
			s.hangRate = 0
		}
		s.reconcile = config.DefaultReconcileInterval
	}
	if s.intake == intakeScaleSet && !set["outage"] {
		// The outage is about deliveries nobody resends; a scale set
		// has none, and its kills are the point.
		s.outage = 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "runfleet-chaos: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if err := s.check(); err != nil {
		fmt.Fprintf(stderr, "runfleet-chaos: %v\n", err)
		return 2
	}
	if s.seed == 0 {
		s.seed = uint64(time.Now().UnixNano())
	}
	if s.arrival == 0 {
		s.arrival = min(time.Duration(s.jobs)*400*time.Millisecond, 3*time.Minute)
	}
	s.replay = replayCommand(fs, s.seed)

	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	rep, err := chaos(ctx, s, stderr)
	if rep != nil {
		rep.print(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "runfleet-chaos: %v\n", err)
		return 1
	}
	if n := len(rep.violations); n > 0 {
		fmt.Fprintf(stderr, "runfleet-chaos: %d violation(s); replay with: %s\n", n, s.replay)
		return 1
	}
	return 0
}

func (s settings) check() error {
	rates := map[string]float64{"-fail-rate": s.failRate, "-hang-rate": s.hangRate, "-boot-fail-rate": s.bootFailRate, "-lose-rate": s.loseRate, "-dup-rate": s.dupRate}
	for name, r := range rates {
		if r < 0 || r > 1 {
			return fmt.Errorf("%s %v: want a share between 0 and 1", name, r)
		}
	}
	switch {
	case s.failRate+s.hangRate > 1:
		return fmt.Errorf("-fail-rate + -hang-rate must not exceed 1")
	case s.jobs < 1 || s.senders < 1 || s.workers < 1 || s.maxRunners < 1:
		return fmt.Errorf("-jobs, -senders, -workers and -max-runners must be ≥ 1")
	case s.kills < 0 || s.arrival < 0 || s.outage < 0 || s.reconcile <= 0:
		return fmt.Errorf("-kills, -arrival and -outage must not be negative, -reconcile-interval must be positive")
	case s.replicas < 1 || s.apps < 1:
		return fmt.Errorf("-replicas and -apps must be ≥ 1")
	case s.replicas > 1 && s.outage > 0:
		return fmt.Errorf("-outage is for one server: with -replicas, every delivery that fails on a killed replica is left to the delivery log")
	case s.intake != intakeWebhook && s.intake != intakeScaleSet:
		return fmt.Errorf("-intake %q: want %s or %s", s.intake, intakeWebhook, intakeScaleSet)
	case s.intake == intakeScaleSet && s.replicas > 1:
		return fmt.Errorf("-intake %s runs on one server: the replicas' scale-set chaos is not built yet", intakeScaleSet)
	case s.timeout < time.Minute:
		return fmt.Errorf("-timeout %s: want at least 1m (settling alone takes most of one)", s.timeout)
	}
	return nil
}

// replayCommand is the command line that repeats this run: the flags given,
// with the seed that was used.
func replayCommand(fs *flag.FlagSet, seed uint64) string {
	parts := []string{"go run ./cmd/runfleet-chaos"}
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "seed" && f.Name != "out" {
			parts = append(parts, fmt.Sprintf("-%s=%s", f.Name, f.Value.String()))
		}
	})
	return strings.Join(append(parts, fmt.Sprintf("-seed=%d", seed)), " ")
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
