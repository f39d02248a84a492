// Package promexport is embedded mode's metrics.Recorder: the vocabulary as
// Prometheus collectors on one registry, served at /metrics. Events are
// counted as they happen; what the store holds (instances, open jobs, dead
// letters) and what the GitHub client counts are read at scrape time.
package promexport

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/runner"
)

// Recorder holds every family of the vocabulary. Every series of every
// configured pool exists from the start, at 0. The children a hot path
// touches (queue time per pool and stage, provider calls per pool and op)
// are looked up once at construction: recording is a map read and an
// atomic add, without allocation.
type Recorder struct {
	reg *prometheus.Registry

	webhooks     *prometheus.CounterVec
	webhookBy    map[[3]string]prometheus.Counter
	queue        *prometheus.HistogramVec
	queueByStage map[poolStage]prometheus.Observer

	providerOps      *prometheus.CounterVec
	providerDuration *prometheus.HistogramVec
	providerByOp     map[poolOp]providerChildren

	deleteRetries *prometheus.CounterVec
	takenOver     *prometheus.CounterVec
	takenOverAge  *prometheus.HistogramVec
	passes        *prometheus.CounterVec
	passDuration  prometheus.Histogram
	actions       []prometheus.Counter // in metrics.ReconcileActionNames order
	lastPass      prometheus.Gauge

	refused     *prometheus.CounterVec
	spot        *prometheus.CounterVec
	breaker     *prometheus.GaugeVec
	failovers   *prometheus.CounterVec
	cost        *prometheus.CounterVec
	overBudget  *prometheus.GaugeVec
	listener    listenerFamilies
	warm        warmFamilies
	cache       *cacheCollector
	now         func() time.Time
	stateSource *state
}

type poolStage struct {
	pool  string
	stage engine.QueueStage
}

type poolOp struct {
	pool, op string
}

type providerChildren struct {
	ok, failed prometheus.Counter
	duration   prometheus.Observer
}

var _ metrics.Recorder = (*Recorder)(nil)

// New builds the registry for pools; state, when set, is read at every
// scrape. The stuck gauges count nothing until CountStuck gives them the
// engine's rule.
func New(pools []string, state State) *Recorder {
	r := &Recorder{reg: prometheus.NewRegistry(), now: time.Now, cache: newCacheCollector()}
	r.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), r.cache)

	r.webhooks = counterVec(r.reg, metrics.Webhooks)
	r.webhookBy = map[[3]string]prometheus.Counter{}
	for _, ev := range metrics.WebhookEvents {
		actions := []string{metrics.None}
		if ev == "workflow_job" {
			actions = metrics.WebhookActions
		}
		for _, a := range actions {
			for _, res := range metrics.WebhookResults {
				r.webhookBy[[3]string{ev, a, res}] = r.webhooks.WithLabelValues(ev, a, res)
			}
		}
	}

	r.queue = histogramVec(r.reg, metrics.JobQueueSeconds)
	r.queueByStage = map[poolStage]prometheus.Observer{}
	r.providerOps = counterVec(r.reg, metrics.ProviderOperations)
	r.providerDuration = histogramVec(r.reg, metrics.ProviderOperationDuration)
	r.providerByOp = map[poolOp]providerChildren{}
	r.deleteRetries = counterVec(r.reg, metrics.DeleteRetries)
	r.takenOver = counterVec(r.reg, metrics.WorkTakenOver)
	r.takenOverAge = histogramVec(r.reg, metrics.WorkTakenOverAge)
	r.refused = counterVec(r.reg, metrics.JobsRefused)
	r.spot = counterVec(r.reg, metrics.SpotInterruptions)
	r.breaker = gaugeVec(r.reg, metrics.SpotBreakerOpen)
	r.failovers = counterVec(r.reg, metrics.CapacityFailovers)
	r.cost = counterVec(r.reg, metrics.CostDollars)
	r.overBudget = gaugeVec(r.reg, metrics.CostBudgetExceeded)
	r.listener = listenerFamilies{
		polls:     counterVec(r.reg, metrics.ListenerPolls),
		conflicts: counterVec(r.reg, metrics.ListenerSessionConflicts),
		lastPoll:  gaugeVec(r.reg, metrics.ListenerLastPoll),
	}
	r.warm = warmFamilies{
		perMinute: gaugeVec(r.reg, metrics.WarmForecastPerMinute),
		need:      gaugeVec(r.reg, metrics.WarmForecastNeed),
		runners:   gaugeVec(r.reg, metrics.WarmRunners),
		idle:      counterVec(r.reg, metrics.WarmIdleSeconds),
	}
	for _, p := range pools {
		r.cost.WithLabelValues(p)
		r.warm.perMinute.WithLabelValues(p)
		r.warm.need.WithLabelValues(p)
		r.warm.runners.WithLabelValues(p)
		r.warm.idle.WithLabelValues(p)
		r.overBudget.WithLabelValues(p)
		for _, s := range engine.QueueStages {
			r.queueByStage[poolStage{p, s}] = r.queue.WithLabelValues(p, string(s))
		}
		for _, op := range metrics.ProviderOps {
			r.providerByOp[poolOp{p, op}] = providerChildren{
				ok:       r.providerOps.WithLabelValues(p, op, metrics.ResultOK),
				failed:   r.providerOps.WithLabelValues(p, op, metrics.ResultError),
				duration: r.providerDuration.WithLabelValues(p, op),
			}
		}
		r.deleteRetries.WithLabelValues(p)
		for _, st := range metrics.TakeoverStatuses {
			r.takenOverAge.WithLabelValues(p, st)
			for _, reason := range metrics.TakeoverReasons {
				r.takenOver.WithLabelValues(p, st, reason)
			}
		}
		for _, reason := range metrics.RefusalReasons {
			r.refused.WithLabelValues(p, reason)
		}
		r.spot.WithLabelValues(p)
		r.breaker.WithLabelValues(p)
		for _, reason := range metrics.FailoverReasons {
			r.failovers.WithLabelValues(p, reason)
		}
	}

	r.passes = counterVec(r.reg, metrics.ReconcilePasses)
	for _, res := range metrics.PassResults {
		r.passes.WithLabelValues(res)
	}
	f, _ := metrics.FamilyByName(metrics.ReconcilePassDuration)
	r.passDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: f.Name, Help: f.Help, Buckets: f.Buckets})
	r.reg.MustRegister(r.passDuration)
	actions := counterVec(r.reg, metrics.ReconcileActions)
	for _, a := range metrics.ReconcileActionNames {
		r.actions = append(r.actions, actions.WithLabelValues(a))
	}
	f, _ = metrics.FamilyByName(metrics.ReconcileLastPass)
	r.lastPass = prometheus.NewGauge(prometheus.GaugeOpts{Name: f.Name, Help: f.Help})
	r.reg.MustRegister(r.lastPass)

	r.stateSource = newState(pools, state)
	r.reg.MustRegister(r.stateSource)
	return r
}

// Handler serves the registry in Prometheus' exposition formats. A family
// that cannot be read (the store is unavailable) is left out and logged;
// the rest are served.
func (r *Recorder) Handler(errorLog promhttp.Logger) http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		ErrorLog:      errorLog,
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      r.reg,
	})
}

// Gatherer is the registry, for tests and for embedding in another.
func (r *Recorder) Gatherer() prometheus.Gatherer { return r.reg }

func (r *Recorder) JobWaited(pool string, stage engine.QueueStage, waited time.Duration) {
	o, ok := r.queueByStage[poolStage{pool, stage}]
	if !ok {
		o = r.queue.WithLabelValues(pool, string(stage))
	}
	o.Observe(waited.Seconds())
}

// InstanceChanged counts the cost of a deleted instance. Instance gauges
// are read from the store at scrape time, so they can never drift from it.
func (r *Recorder) InstanceChanged(inst *runner.Instance, _ runner.Status) {
	if usd, ok := metrics.DeletedCost(inst); ok {
		r.cost.WithLabelValues(inst.Pool).Add(usd)
	}
}

// BudgetExceeded sets runfleet_cost_budget_exceeded for pool.
func (r *Recorder) BudgetExceeded(pool string, exceeded bool) {
	v := 0.0
	if exceeded {
		v = 1
	}
	r.overBudget.WithLabelValues(pool).Set(v)
}

func (r *Recorder) DeleteRetried(pool string) { r.deleteRetries.WithLabelValues(pool).Inc() }

func (r *Recorder) WorkTakenOver(inst *runner.Instance, reason string, age time.Duration) {
	r.takenOver.WithLabelValues(inst.Pool, string(inst.Status), reason).Inc()
	r.takenOverAge.WithLabelValues(inst.Pool, string(inst.Status)).Observe(age.Seconds())
}

func (r *Recorder) ReconcilePassed(rep engine.ReconcileReport, took time.Duration) {
	r.passDuration.Observe(took.Seconds())
	for i, n := range metrics.ReconcileActionCounts(rep) {
		if n > 0 {
			r.actions[i].Add(float64(n))
		}
	}
	r.lastPass.Set(float64(r.now().UnixNano()) / 1e9)
	for _, w := range rep.Warm {
		r.warm.perMinute.WithLabelValues(w.Pool).Set(w.PerMinute)
		r.warm.need.WithLabelValues(w.Pool).Set(float64(w.Need))
		r.warm.runners.WithLabelValues(w.Pool).Set(float64(w.Hot))
		r.warm.idle.WithLabelValues(w.Pool).Add(w.IdleSeconds)
	}
}

// warmFamilies are the adaptive warm pools' families (pools[].warm), set
// from each reconcile report.
type warmFamilies struct {
	perMinute, need, runners *prometheus.GaugeVec
	idle                     *prometheus.CounterVec
}

func (r *Recorder) ReconcileResult(err error) {
	r.passes.WithLabelValues(metrics.PassResult(err)).Inc()
}

func (r *Recorder) Webhook(event, action, result string) {
	key := [3]string{metrics.Known(metrics.WebhookEvents, event), metrics.Known(metrics.WebhookActions, action), metrics.Known(metrics.WebhookResults, result)}
	c, ok := r.webhookBy[key]
	if !ok {
		c = r.webhooks.WithLabelValues(key[:]...)
	}
	c.Inc()
}

func (r *Recorder) ProviderCalled(pool, op string, err error, took time.Duration) {
	c, ok := r.providerByOp[poolOp{pool, op}]
	if !ok {
		c = providerChildren{
			ok:       r.providerOps.WithLabelValues(pool, op, metrics.ResultOK),
			failed:   r.providerOps.WithLabelValues(pool, op, metrics.ResultError),
			duration: r.providerDuration.WithLabelValues(pool, op),
		}
	}
	if err != nil {
		c.failed.Inc()
	} else {
		c.ok.Inc()
	}
	c.duration.Observe(took.Seconds())
}

func (r *Recorder) JobRefused(pool, reason string) {
	r.refused.WithLabelValues(pool, metrics.Known(metrics.RefusalReasons, reason)).Inc()
}

func (r *Recorder) SpotInterrupted(pool string) { r.spot.WithLabelValues(pool).Inc() }

func (r *Recorder) SpotBreaker(pool string, open bool) {
	v := 0.0
	if open {
		v = 1
	}
	r.breaker.WithLabelValues(pool).Set(v)
}

func (r *Recorder) CapacityFailover(pool, reason string) {
	r.failovers.WithLabelValues(pool, metrics.Known(metrics.FailoverReasons, reason)).Inc()
}

func counterVec(reg *prometheus.Registry, name string) *prometheus.CounterVec {
	f, _ := metrics.FamilyByName(name)
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: f.Name, Help: f.Help}, f.Labels)
	reg.MustRegister(v)
	return v
}

func gaugeVec(reg *prometheus.Registry, name string) *prometheus.GaugeVec {
	f, _ := metrics.FamilyByName(name)
	v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: f.Name, Help: f.Help}, f.Labels)
	reg.MustRegister(v)
	return v
}

func histogramVec(reg *prometheus.Registry, name string) *prometheus.HistogramVec {
	f, _ := metrics.FamilyByName(name)
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: f.Name, Help: f.Help, Buckets: f.Buckets}, f.Labels)
	reg.MustRegister(v)
	return v
}

// installationLabel is a rate limit's installation label value.
func installationLabel(id int64) string { return strconv.FormatInt(id, 10) }

// CountStuck gives the stuck gauges the rule they count by
// (engine.Engine.Stuck: the same bounds the reconciler acts on). It is the
// one thing the recorder reads that cannot exist before it: the engine
// reports to the recorder, so it is built after it. Serve hands the rule
// over as soon as the engine is built, before anything is served; until
// then no instance counts as stuck. Safe to call while scrapes run.
func (r *Recorder) CountStuck(stuck metrics.StuckFunc) {
	r.stateSource.stuckRule.Store(&stuck)
}
