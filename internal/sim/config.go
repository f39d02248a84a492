package sim

import (
	"math/rand/v2"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// Config is one simulation run: its size, its world and its fault rates.
// Every probability is per occurrence (per call, per delivery, per write).
type Config struct {
	Seed uint64
	// Jobs is how many workflow jobs GitHub queues during the load phase.
	Jobs int
	// ArrivalMean is the mean time between job arrivals; Bursts is the
	// chance that an arrival brings 5–15 jobs at once.
	ArrivalMean time.Duration
	Bursts      float64

	Workers           int
	ReconcileInterval time.Duration
	// Quiescence is how long the world runs with faults off before the
	// final checks; it covers the longest job, a slow boot, the delete
	// backoff cap and several reconcile passes.
	Quiescence time.Duration
	// LongTail, when set, lets a further 25 hours pass before the final
	// checks, so GitHub's 24-hour queue limit and the record retentions
	// come into play.
	LongTail bool

	GitHub GitHubFaults
	// GitHubLimit is GitHub's secondary limit: points a minute per
	// installation over a sliding 60 s window (a GET costs 1, a POST or
	// DELETE 5); past it GitHub refuses, and each call during the
	// penalty extends it. 0: no limit. BudgetPointsPerMinute is runfleet's
	// own budget (github.budget.points_per_minute), which must keep it
	// from ever being refused.
	GitHubLimit           int
	BudgetPointsPerMinute int
	// Apps is how many GitHub Apps runfleet calls through (github.app and
	// extra_apps), each its own installation, budget and limit; 1 by
	// default. The first is the one whose webhooks it receives.
	Apps     int
	Webhooks WebhookFaults
	Provider ProviderFaults
	Crashes  CrashFaults
	World    WorldRates

	// MinIdle is the linux pool's min_idle (warm runners).
	MinIdle int
	// Warm, when set, is the linux pool's queue-time target: its warm
	// runners sized from the job ledger (internal/warm), MinIdle the floor.
	Warm *runner.WarmPolicy
	// Roomy gives the pools room for every job at once (max_runners 30),
	// so no job waits for capacity: the real-time run's budget.
	Roomy bool
	// ScaleSet, when set, adds a runner scale set and its pool, fed by the
	// real listener (actions_*.go); nil: a world of webhooks only.
	ScaleSet *ScaleSetConfig

	// Replicas, when 2 or more, runs runfleet as that many `serve`
	// replicas over one shared store and queue, as on PostgreSQL
	// (replicas.go): the state is opened once and outlives every process;
	// a replica that dies loses only its own tasks, and no start runs the
	// recovery of work left in flight (serve runs it only on a store it
	// owns alone). 0 or 1: one process over a state file it owns (bolt).
	Replicas int
	// StoreOutage is the shared store's outage (outage.go): a window of
	// virtual time in which every store and queue call fails.
	StoreOutage OutageFaults
	// DeadWorkBound is how long capacity may be held by work nobody is
	// doing (deadwork.go); 0: liveDeadWorkBound with replicas,
	// deadWorkBound without.
	DeadWorkBound time.Duration

	// PlainWorker runs the queue workers as the simulation had them before
	// issue #32: no deadline on a message's work (so its claims carry no
	// bound) and no repeat of a failed message. Only the tests that replay
	// an older engine's failures use it.
	PlainWorker bool

	// StopAtFirst ends the run at the first broken invariant.
	StopAtFirst bool

	// TraceLines is how many trace lines a failure report shows.
	TraceLines int
	// Echo, when set, receives every trace line as it is written.
	Echo func(line string)
	// LogToTrace writes the controller's log lines into the trace (a
	// replay's diagnosis); otherwise they are discarded.
	LogToTrace bool
}

// GitHubFaults are the REST API's misbehaviours.
type GitHubFaults struct {
	// ServerError: a 5xx before anything happened; ErrorAfterEffect: a 5xx
	// although the call took effect (GitHub "sometimes errors yet creates
	// the runner").
	ServerError      float64
	ErrorAfterEffect float64
	// RateLimited: a 429 with Retry-After (secondary limit).
	RateLimited float64
	// BusyLie: in a runner listing, a runner running a job is reported
	// busy:false (actions/runner #4422).
	BusyLie float64
}

// WebhookFaults are how workflow_job deliveries go wrong. GitHub never
// retries a delivery by itself; Redelivered models an operator (or a
// script) redelivering it later with the same delivery id.
type WebhookFaults struct {
	Dropped     float64
	Duplicated  float64
	Delayed     float64 // 10 s – 10 min late instead of within 2 s
	Redelivered float64
}

// ProviderFaults are the compute provider's misbehaviours.
type ProviderFaults struct {
	// Fail: the call fails; half of those fail after the machine was made
	// or destroyed.
	Fail float64
	// Hang: the call never returns before its caller's timeout; half of the
	// hung calls still take effect.
	Hang float64
	// SlowBoot: the machine takes 4–9 minutes to register its runner
	// instead of 20–90 s.
	SlowBoot float64
	// Spot is the share of machines the cloud takes back (a spot
	// interruption) at a random moment 30 s – 8 min after it made them —
	// booting, idle or running a job.
	Spot float64
	// SpotWarnings is the share of seeds whose engine also hears of each
	// interruption two minutes before the machine goes (EventBridge's
	// warning, through HandleInterruption); SpotWarningTwice, the chance
	// that a warning is delivered a second time. Every seed's reconcile
	// passes also poll the provider (ListInterrupted), as serve does.
	SpotWarnings     float64
	SpotWarningTwice float64
	// DeleteByNameNoop names pools whose provider answers a delete by name
	// with success and does nothing, as garm-provider-aws does.
	DeleteByNameNoop []string
}

// CrashFaults kill the runfleet process.
type CrashFaults struct {
	// PerWrite is the chance that the process dies at a store or queue
	// write (half before it, half right after it is durable).
	PerWrite float64
	// PerProviderCall is the chance that it dies during a provider call,
	// which takes effect or not.
	PerProviderCall float64
}

// OutageFaults take the shared store down for a while: a database
// restarting, a failover.
type OutageFaults struct {
	// Chance is the chance that a seed has one outage, at a random moment
	// of its load phase, lasting Min–Max.
	Chance   float64
	Min, Max time.Duration
	// LostCommit is the chance that a write during the outage takes effect
	// and its answer is lost (the commit went through, the connection
	// broke before the reply): the worst the real store allows.
	LostCommit float64
}

// WorldRates shape the jobs GitHub sees.
type WorldRates struct {
	// Cancelled: a job is cancelled while it waits for a runner.
	Cancelled float64
	// Waiting: a job goes queued -> waiting (environment approval) ->
	// queued.
	Waiting float64
	// ForceDelete: the chance per reconcile interval that an operator
	// force-deletes a random live instance.
	ForceDelete float64
}

// DefaultConfig is the fault model of the acceptance run.
func DefaultConfig(seed uint64) Config {
	return Config{
		Seed:              seed,
		Jobs:              50,
		ArrivalMean:       25 * time.Second,
		Bursts:            0.03,
		Workers:           4,
		ReconcileInterval: 30 * time.Second,
		Quiescence:        45 * time.Minute,
		GitHub: GitHubFaults{
			ServerError:      0.05,
			ErrorAfterEffect: 0.03,
			RateLimited:      0.02,
			BusyLie:          0.2,
		},
		GitHubLimit:           900,
		BudgetPointsPerMinute: 810,
		Webhooks: WebhookFaults{
			Dropped:     0.05,
			Duplicated:  0.10,
			Delayed:     0.10,
			Redelivered: 0.05,
		},
		Provider: ProviderFaults{
			Fail:             0.30,
			Hang:             0.02,
			SlowBoot:         0.05,
			Spot:             0.05,
			SpotWarnings:     0.5,
			SpotWarningTwice: 0.3,
			DeleteByNameNoop: []string{"gpu"},
		},
		Crashes: CrashFaults{
			PerWrite:        0.0005,
			PerProviderCall: 0.005,
		},
		World: WorldRates{
			Cancelled:   0.05,
			Waiting:     0.05,
			ForceDelete: 0.01,
		},
		TraceLines: 200,
	}
}

// replicaWorld makes cfg a world of three `serve` replicas over one
// shared store and queue (replicas.go), as on PostgreSQL: replicas die
// (abruptly, between two writes of a worker) four times as often as the
// single process does, and half of the seeds see the store go down for
// 2–40 s (a database restart), a third of the writes in it taking effect
// with their answer lost.
func replicaWorld(cfg *Config) {
	cfg.Replicas = 3
	cfg.Crashes.PerWrite *= 4
	cfg.Crashes.PerProviderCall *= 4
	cfg.StoreOutage = OutageFaults{Chance: 0.5, Min: 2 * time.Second, Max: 40 * time.Second, LostCommit: 0.3}
}

// chance reports true with probability p.
func chance(r *rand.Rand, p float64) bool {
	return p > 0 && r.Float64() < p
}

// between returns a duration uniformly in [lo, hi], to the millisecond.
func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	span := int64((hi - lo) / time.Millisecond)
	return lo + time.Duration(r.Int64N(span+1))*time.Millisecond
}
