package promexport

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/queue"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// scrapeTimeout bounds the store reads of one scrape.
const scrapeTimeout = 5 * time.Second

// State is where a scrape reads what is not counted as it happens: the
// adapters themselves, which exist before the recorder does.
type State struct {
	// Store is read at every scrape: its live instances and open jobs
	// (metrics.MeasureFleet). Nil: every pool's gauges read 0.
	Store store.Store
	// DeadLetters counts the dead-lettered work messages. Nil: 0.
	DeadLetters queue.DeadLetterer
	// GitHub is the real GitHub client's own telemetry; nil with the
	// simulated GitHub, whose calls then read 0.
	GitHub GitHubTelemetry
	// MaxRunners is each pool's configured limit (runfleet_pool_max_runners).
	MaxRunners map[string]int
	// Build is the running binary's stamp (runfleet_build_info).
	Build metrics.Build
}

// GitHubTelemetry is what the real GitHub client (rest.Client) reports
// about itself.
type GitHubTelemetry interface {
	Calls() rest.CallCounts
	RateLimits() map[int64]rest.RateLimit
}

// GitHubRefusals is what a GitHub client with Apps reports of GitHub
// refusing them (rest.Client, spread.GitHub): by App id, the owners and
// installations GitHub refuses it on.
type GitHubRefusals interface {
	AppRefusals() map[int64]int
}

// state is the collector of everything State reads.
type state struct {
	pools []string
	src   State
	now   func() time.Time
	// stuckRule is the rule the stuck gauges count by (Recorder.CountStuck);
	// nil: none counted.
	stuckRule atomic.Pointer[metrics.StuckFunc]

	instances, stuck, openJobs, waiting, waits, deadLetters, calls *prometheus.Desc
	remaining, refused                                             *prometheus.Desc
	unmatched, oldest, maxRunners, build                           *prometheus.Desc
}

func newState(pools []string, src State) *state {
	desc := func(name string) *prometheus.Desc {
		f, _ := metrics.FamilyByName(name)
		return prometheus.NewDesc(f.Name, f.Help, f.Labels, nil)
	}
	return &state{
		pools:       slices.Clone(pools),
		src:         src,
		now:         time.Now,
		instances:   desc(metrics.Instances),
		stuck:       desc(metrics.InstancesStuck),
		openJobs:    desc(metrics.OpenJobs),
		waiting:     desc(metrics.JobsWaitingForCapacity),
		waits:       desc(metrics.JobsWaiting),
		deadLetters: desc(metrics.DeadLetters),
		calls:       desc(metrics.GitHubCalls),
		remaining:   desc(metrics.GitHubRateLimitRemaining),
		refused:     desc(metrics.GitHubAppRefused),
		unmatched:   desc(metrics.JobsUnmatched),
		oldest:      desc(metrics.OldestWaitingJob),
		maxRunners:  desc(metrics.PoolMaxRunners),
		build:       desc(metrics.BuildInfo),
	}
}

func (s *state) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{s.instances, s.stuck, s.openJobs, s.waiting, s.waits, s.deadLetters, s.calls, s.remaining, s.refused,
		s.unmatched, s.oldest, s.maxRunners, s.build} {
		ch <- d
	}
}

func (s *state) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	s.collectFleet(ctx, ch)
	dead := 0
	if s.src.DeadLetters != nil {
		msgs, err := s.src.DeadLetters.DeadLetters(ctx)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(s.deadLetters, fmt.Errorf("read dead letters: %w", err))
		} else {
			dead = len(msgs)
		}
	}
	ch <- prometheus.MustNewConstMetric(s.deadLetters, prometheus.GaugeValue, float64(dead))
	s.collectGitHub(ch)
	ch <- prometheus.MustNewConstMetric(s.build, prometheus.GaugeValue, 1, orUnknown(s.src.Build.Version), orUnknown(s.src.Build.Commit))
}

func (s *state) collectFleet(ctx context.Context, ch chan<- prometheus.Metric) {
	fleet, err := s.measureFleet(ctx)
	if err != nil {
		// Zeros would read as "nothing stuck": show the failure instead.
		ch <- prometheus.NewInvalidMetric(s.instances, fmt.Errorf("read the fleet: %w", err))
		return
	}
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	for _, p := range fleet.Pools {
		for _, st := range runner.AllStatuses {
			gauge(s.instances, fleet.Instances[metrics.PoolStatus{Pool: p, Status: st}], p, string(st))
			gauge(s.stuck, fleet.Stuck[metrics.PoolStatus{Pool: p, Status: st}], p, string(st))
		}
		for _, a := range metrics.OpenJobAges {
			gauge(s.openJobs, fleet.OpenJobs[metrics.PoolAge{Pool: p, Age: a}], p, a)
		}
		gauge(s.waiting, fleet.Waiting[p], p)
		for _, w := range metrics.WaitReasons {
			gauge(s.waits, fleet.Waits[metrics.PoolWait{Pool: p, Wait: w}], p, string(w))
		}
		ch <- prometheus.MustNewConstMetric(s.oldest, prometheus.GaugeValue, fleet.OldestWaiting[p], p)
		gauge(s.maxRunners, fleet.MaxRunners[p], p)
	}
	for _, reason := range metrics.UnmatchedReasons {
		gauge(s.unmatched, fleet.Unmatched[reason], reason)
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// limits are the configured pools with their max_runners.
func (s *state) limits() []metrics.PoolLimit {
	out := make([]metrics.PoolLimit, 0, len(s.pools))
	for _, p := range s.pools {
		out = append(out, metrics.PoolLimit{Name: p, MaxRunners: s.src.MaxRunners[p]})
	}
	return out
}

func (s *state) collectGitHub(ch chan<- prometheus.Metric) {
	var calls rest.CallCounts
	var limits map[int64]rest.RateLimit
	if s.src.GitHub != nil {
		calls, limits = s.src.GitHub.Calls(), s.src.GitHub.RateLimits()
	}
	ops := slices.Clone(rest.Operations)
	for k := range calls.ByResult {
		if !slices.Contains(ops, k.Operation) {
			ops = append(ops, k.Operation)
		}
	}
	for _, op := range ops {
		for _, res := range rest.CallResults {
			n := calls.ByResult[rest.CallKey{Operation: op, Result: res}]
			ch <- prometheus.MustNewConstMetric(s.calls, prometheus.CounterValue, float64(n), op, res)
		}
	}
	// A budget is not 0 before GitHub was asked: an installation's series
	// appears with GitHub's first answer for it.
	now := s.now()
	for id, rate := range limits {
		ch <- prometheus.MustNewConstMetric(s.remaining, prometheus.GaugeValue, float64(rate.RemainingAt(now)), installationLabel(id))
	}
	// Every App has its series, at 0 while GitHub accepts it; a personal
	// access token or the simulated GitHub has none.
	if r, ok := s.src.GitHub.(GitHubRefusals); ok {
		for app, n := range r.AppRefusals() {
			ch <- prometheus.MustNewConstMetric(s.refused, prometheus.GaugeValue, float64(n), strconv.FormatInt(app, 10))
		}
	}
}

// measureFleet reads the store's live instances and open jobs for the
// gauges; without a store every configured pool reads 0.
func (s *state) measureFleet(ctx context.Context) (metrics.Fleet, error) {
	var stuck metrics.StuckFunc
	if rule := s.stuckRule.Load(); rule != nil {
		stuck = *rule
	}
	if s.src.Store == nil {
		return metrics.MeasureFleet(s.limits(), nil, nil, s.now(), nil), nil
	}
	live, err := s.src.Store.ListLiveInstances(ctx)
	if err != nil {
		return metrics.Fleet{}, err
	}
	open, err := s.src.Store.ListOpenJobs(ctx)
	if err != nil {
		return metrics.Fleet{}, err
	}
	return metrics.MeasureFleet(s.limits(), live, open, s.now(), stuck), nil
}
