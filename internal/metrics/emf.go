package metrics

import (
	"io"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/telemetry"
)

// EMF is the Recorder of the Lambda functions: each event becomes an EMF
// sample under the family's name, its labels as dimensions, and Flush
// writes the invocation's samples as log lines CloudWatch turns into
// metrics. Every metric also lands in the [controller_id] rollup, and a few
// in the extra sets the alarms need (EMFExtraSets).
//
// Counters are samples of 1 (their Sum over a period is the count);
// histograms are samples in seconds (percentiles come from CloudWatch);
// gauges are written once per reconcile pass (Fleet). A labelled series
// gets a point only while it is not 0 — CloudWatch bills every series, and
// alarms treat a missing point as 0 — while the rollup of a gauge gets a
// point every pass, 0 included, so alarms on it always have data.
//
// Lambda runs one invocation at a time per execution environment, so one
// EMF per function, flushed at the end of each invocation, carries exactly
// that invocation's samples.
type EMF struct {
	emf *telemetry.EMF
	now func() time.Time
}

var _ Recorder = (*EMF)(nil)

// NewEMF writes the vocabulary as EMF to w, for installation controllerID.
func NewEMF(w io.Writer, controllerID string) *EMF {
	return &EMF{
		emf: telemetry.NewEMF(w, telemetry.Namespace, telemetry.Dimension{Name: LabelControllerID, Value: controllerID}),
		now: time.Now,
	}
}

// WithClock pins the clock of documents and of the last-pass gauge (tests).
func (e *EMF) WithClock(now func() time.Time) *EMF {
	e.now = now
	e.emf.WithClock(now)
	return e
}

// Flush writes everything recorded since the last Flush.
func (e *EMF) Flush() error { return e.emf.Flush() }

func (e *EMF) put(name string, value float64, labels ...string) {
	unit := telemetry.UnitCount
	switch {
	case name == ReconcileLastPass, name == CostDollars:
		unit = telemetry.UnitNone // a point in time; dollars
	case strings.HasSuffix(name, "_seconds"):
		unit = telemetry.UnitSeconds
	}
	if u, ok := cacheUnit(name); ok {
		unit = u
	}
	if len(labels) == 0 {
		e.emf.Put(name, value, unit)
		return
	}
	f, _ := FamilyByName(name)
	dims := make([]telemetry.Dimension, len(labels))
	for i, v := range labels {
		dims[i] = telemetry.Dimension{Name: f.Labels[i], Value: v}
	}
	e.emf.PutWithSets(name, value, unit, EMFExtraSets[name], dims...)
}

func (e *EMF) JobWaited(pool string, stage engine.QueueStage, waited time.Duration) {
	e.put(JobQueueSeconds, waited.Seconds(), pool, string(stage))
}

// InstanceChanged records the cost of a deleted instance (the sum over a
// period is what the pool cost; the CostOverBudget alarm reads it).
// Instance gauges are read from the store once per pass (Fleet), which
// also sees what other functions changed.
func (e *EMF) InstanceChanged(inst *runner.Instance, _ runner.Status) {
	if usd, ok := DeletedCost(inst); ok {
		e.put(CostDollars, usd, inst.Pool)
	}
}

func (e *EMF) DeleteRetried(pool string) { e.put(DeleteRetries, 1, pool) }

func (e *EMF) WorkTakenOver(inst *runner.Instance, reason string, age time.Duration) {
	e.put(WorkTakenOver, 1, inst.Pool, string(inst.Status), reason)
	e.put(WorkTakenOverAge, age.Seconds(), inst.Pool, string(inst.Status))
}

func (e *EMF) ReconcilePassed(rep engine.ReconcileReport, took time.Duration) {
	e.put(ReconcilePassDuration, took.Seconds())
	for i, n := range ReconcileActionCounts(rep) {
		if n > 0 {
			e.put(ReconcileActions, float64(n), ReconcileActionNames[i])
		}
	}
	e.put(ReconcileLastPass, float64(e.now().Unix()))
	for _, w := range rep.Warm {
		e.put(WarmForecastPerMinute, w.PerMinute, w.Pool)
		e.put(WarmForecastNeed, float64(w.Need), w.Pool)
		e.put(WarmRunners, float64(w.Hot), w.Pool)
		e.put(WarmIdleSeconds, w.IdleSeconds, w.Pool)
	}
}

func (e *EMF) ReconcileResult(err error) { e.put(ReconcilePasses, 1, PassResult(err)) }

func (e *EMF) Webhook(event, action, result string) {
	e.put(Webhooks, 1, Known(WebhookEvents, event), Known(WebhookActions, action), Known(WebhookResults, result))
}

func (e *EMF) ProviderCalled(pool, op string, err error, took time.Duration) {
	result := ResultOK
	if err != nil {
		result = ResultError
	}
	e.put(ProviderOperations, 1, pool, op, result)
	e.put(ProviderOperationDuration, took.Seconds(), pool, op)
}

func (e *EMF) JobRefused(pool, reason string) {
	e.put(JobsRefused, 1, pool, Known(RefusalReasons, reason))
}

func (e *EMF) SpotInterrupted(pool string) { e.put(SpotInterruptions, 1, pool) }

func (e *EMF) SpotBreaker(pool string, open bool) {
	v := 0.0
	if open {
		v = 1
	}
	e.put(SpotBreakerOpen, v, pool)
}

func (e *EMF) CapacityFailover(pool, reason string) {
	e.put(CapacityFailovers, 1, pool, Known(FailoverReasons, reason))
}

// ListenerListening writes nothing: the function's invocation gives the
// polls their zero (ListenersScheduled), whether or not it gets the lease.
func (e *EMF) ListenerListening(string) {}

// ListenerPolled is one sample of 1 under the pool; the Sum over a period
// is the polls answered in it.
func (e *EMF) ListenerPolled(pool string) { e.put(ListenerPolls, 1, pool) }

func (e *EMF) ListenerSessionConflict(pool string) { e.put(ListenerSessionConflicts, 1, pool) }

// ListenersScheduled records that an invocation runs scale-set listeners:
// a 0 on the polls' rollup, so that ListenerNotPollingAlarm has data (a
// Sum of 0) whenever a listener should have polled and none was answered,
// while a stack without a scale-set pool writes nothing and stays OK. The
// labelled series keep only real polls, as every counter's do.
func (e *EMF) ListenersScheduled() { e.put(ListenerPolls, 0) }

// GitHubCalls records n requests to GitHub of one operation and result.
func (e *EMF) GitHubCalls(operation, result string, n int64) {
	if n > 0 {
		e.put(GitHubCalls, float64(n), operation, result)
	}
}

// GitHubRateLimitRemaining records an installation's remaining budget.
func (e *EMF) GitHubRateLimitRemaining(installation string, remaining int) {
	e.put(GitHubRateLimitRemaining, float64(remaining), installation)
}

// GitHubAppRefused records how many owners and installations GitHub
// refuses an App on.
func (e *EMF) GitHubAppRefused(app string, refused int) {
	e.put(GitHubAppRefused, float64(refused), app)
}

// Fleet records the gauges read from the store in one reconcile pass.
func (e *EMF) Fleet(f Fleet) {
	gauge := func(name string, total int, each func(put func(v int, labels ...string))) {
		each(func(v int, labels ...string) {
			if v != 0 {
				e.put(name, float64(v), labels...)
			}
		})
		if total == 0 {
			e.put(name, 0)
		}
	}
	gauge(Instances, sum(f.Instances), func(put func(int, ...string)) {
		for _, p := range f.Pools {
			for _, s := range runner.AllStatuses {
				put(f.Instances[PoolStatus{p, s}], p, string(s))
			}
		}
	})
	gauge(InstancesStuck, sum(f.Stuck), func(put func(int, ...string)) {
		for _, p := range f.Pools {
			for _, s := range runner.AllStatuses {
				put(f.Stuck[PoolStatus{p, s}], p, string(s))
			}
		}
	})
	gauge(OpenJobs, sum(f.OpenJobs), func(put func(int, ...string)) {
		for _, p := range f.Pools {
			for _, a := range OpenJobAges {
				put(f.OpenJobs[PoolAge{p, a}], p, a)
			}
		}
	})
	gauge(JobsWaitingForCapacity, sum(f.Waiting), func(put func(int, ...string)) {
		for _, p := range f.Pools {
			put(f.Waiting[p], p)
		}
	})
	gauge(JobsWaiting, sum(f.Waits), func(put func(int, ...string)) {
		for _, p := range f.Pools {
			for _, w := range WaitReasons {
				put(f.Waits[PoolWait{p, w}], p, string(w))
			}
		}
	})
	gauge(JobsUnmatched, sum(f.Unmatched), func(put func(int, ...string)) {
		for _, r := range UnmatchedReasons {
			put(f.Unmatched[r], r)
		}
	})
	// The oldest wait's rollup is the longest over pools (a sum of ages
	// means nothing); a configured pool's max_runners is never 0, so it
	// is there every pass.
	oldest := 0.0
	for _, p := range f.Pools {
		if age := f.OldestWaiting[p]; age > 0 {
			e.put(OldestWaitingJob, age, p)
			oldest = max(oldest, age)
		}
		if n := f.MaxRunners[p]; n > 0 {
			e.put(PoolMaxRunners, float64(n), p)
		}
	}
	e.put(OldestWaitingJob, oldest)
}

func sum[K comparable](m map[K]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
