package promexport

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/runner"
)

// scrapeTimeout bounds the store reads of one scrape.
const scrapeTimeout = 5 * time.Second

// State is where a scrape reads what is not counted as it happens.
type State struct {
	// Fleet reads the live instances and open jobs (engine.Engine via
	// metrics.MeasureFleet). Nil: every pool's gauges read 0.
	Fleet func(ctx context.Context) (metrics.Fleet, error)
	// DeadLetters counts the dead-lettered work messages. Nil: 0.
	DeadLetters func(ctx context.Context) (int, error)
	// GitHub is the real GitHub client's own telemetry; nil with the
	// simulated GitHub, whose calls then read 0.
	GitHub GitHubTelemetry
}

// GitHubTelemetry is what the real GitHub client (rest.Client) reports
// about itself.
type GitHubTelemetry interface {
	Calls() rest.CallCounts
	RateLimits() map[int64]rest.RateLimit
}

// state is the collector of everything State reads.
type state struct {
	pools []string
	src   State
	now   func() time.Time

	instances, stuck, openJobs, waiting, deadLetters, calls, remaining *prometheus.Desc
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
		deadLetters: desc(metrics.DeadLetters),
		calls:       desc(metrics.GitHubCalls),
		remaining:   desc(metrics.GitHubRateLimitRemaining),
	}
}

func (s *state) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{s.instances, s.stuck, s.openJobs, s.waiting, s.deadLetters, s.calls, s.remaining} {
		ch <- d
	}
}

func (s *state) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	s.collectFleet(ctx, ch)
	dead := 0
	if s.src.DeadLetters != nil {
		n, err := s.src.DeadLetters(ctx)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(s.deadLetters, fmt.Errorf("read dead letters: %w", err))
		} else {
			dead = n
		}
	}
	ch <- prometheus.MustNewConstMetric(s.deadLetters, prometheus.GaugeValue, float64(dead))
	s.collectGitHub(ch)
}

func (s *state) collectFleet(ctx context.Context, ch chan<- prometheus.Metric) {
	fleet := metrics.MeasureFleet(s.pools, nil, nil, s.now(), nil)
	if s.src.Fleet != nil {
		f, err := s.src.Fleet(ctx)
		if err != nil {
			// Zeros would read as "nothing stuck": show the failure instead.
			ch <- prometheus.NewInvalidMetric(s.instances, fmt.Errorf("read the fleet: %w", err))
			return
		}
		fleet = f
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
	}
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
}
