// Package metrics is runfleet's one metric vocabulary: the family names,
// their labels and buckets, and the Recorder every part of runfleet reports
// to. Embedded mode exposes it as Prometheus text (internal/metrics/promexport,
// scraped at /metrics); the Lambda functions write it as CloudWatch Embedded
// Metric Format (EMF here), with the same names: a family's name is the EMF
// metric name and its label names are the EMF dimension names.
//
// This package links neither the Prometheus client nor GitHub's, so the
// webhook and metadata functions can record without carrying them.
package metrics

import "github.com/runfleet/runfleet/internal/runner"

// The families. Every name follows Prometheus' conventions: base units,
// _total on counters, _seconds on durations.
const (
	Webhooks                  = "runfleet_webhooks_total"
	JobQueueSeconds           = "runfleet_job_queue_seconds"
	JobsWaitingForCapacity    = "runfleet_jobs_waiting_for_capacity"
	JobsWaiting               = "runfleet_jobs_waiting"
	OpenJobs                  = "runfleet_open_jobs"
	Instances                 = "runfleet_instances"
	InstancesStuck            = "runfleet_instances_stuck"
	ProviderOperations        = "runfleet_provider_operations_total"
	ProviderOperationDuration = "runfleet_provider_operation_duration_seconds"
	GitHubCalls               = "runfleet_github_calls_total"
	GitHubRateLimitRemaining  = "runfleet_github_rate_limit_remaining"
	GitHubAppRefused          = "runfleet_github_app_refused"
	DeleteRetries             = "runfleet_delete_retries_total"
	WorkTakenOver             = "runfleet_work_taken_over_total"
	WorkTakenOverAge          = "runfleet_work_taken_over_age_seconds"
	DeadLetters               = "runfleet_dead_letters"
	ReconcilePasses           = "runfleet_reconcile_passes_total"
	ReconcilePassDuration     = "runfleet_reconcile_pass_duration_seconds"
	ReconcileActions          = "runfleet_reconcile_actions_total"
	ReconcileLastPass         = "runfleet_reconcile_last_pass_timestamp_seconds"
	JobsRefused               = "runfleet_jobs_refused_total"
	SpotInterruptions         = "runfleet_spot_interruptions_total"
	SpotBreakerOpen           = "runfleet_spot_breaker_open"
	CapacityFailovers         = "runfleet_capacity_failovers_total"
	JobsUnmatched             = "runfleet_jobs_unmatched"
	OldestWaitingJob          = "runfleet_oldest_waiting_job_seconds"
	PoolMaxRunners            = "runfleet_pool_max_runners"
	BuildInfo                 = "runfleet_build_info"
	CostDollars               = "runfleet_cost_dollars_total"
	CostBudgetExceeded        = "runfleet_cost_budget_exceeded"
	ListenerPolls             = "runfleet_listener_polls_total"
	ListenerSessionConflicts  = "runfleet_listener_session_conflicts_total"
	ListenerLastPoll          = "runfleet_listener_last_poll_timestamp_seconds"
	WarmForecastPerMinute     = "runfleet_warm_forecast_jobs_per_minute"
	WarmForecastNeed          = "runfleet_warm_forecast_need"
	WarmRunners               = "runfleet_warm_runners"
	WarmIdleSeconds           = "runfleet_warm_idle_seconds_total"
	CacheLookups              = "runfleet_cache_lookups_total"
	CacheTransferBytes        = "runfleet_cache_transfer_bytes_total"
	CacheStoredBytes          = "runfleet_cache_stored_bytes"
	CacheEntries              = "runfleet_cache_entries"
)

// Label names; on EMF they are the dimension names.
const (
	LabelEvent        = "event"
	LabelAction       = "action"
	LabelResult       = "result"
	LabelPool         = "pool"
	LabelStage        = "stage"
	LabelAge          = "age"
	LabelStatus       = "status"
	LabelOp           = "op"
	LabelOperation    = "operation"
	LabelInstallation = "installation"
	LabelApp          = "app"
	LabelReason       = "reason"
	LabelVersion      = "version"
	LabelCommit       = "commit"
	// LabelControllerID is EMF's common dimension, on every metric: one
	// CloudWatch namespace can hold several runfleet installations.
	LabelControllerID = "controller_id"
)

// Kind is how a family's value behaves.
type Kind int

// The kinds runfleet uses.
const (
	Counter Kind = iota
	Gauge
	Histogram
)

// Family describes one metric family: what the exporters build and what
// the tests check is present.
type Family struct {
	Name    string
	Help    string
	Kind    Kind
	Labels  []string
	Buckets []float64 // histograms only
}

// QueueBuckets bound the job queue time histogram, in seconds: dense where
// a healthy fleet sits (seconds to a few minutes for a cold machine), then
// coarse up to an hour.
var QueueBuckets = []float64{1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600, 1200, 1800, 3600}

// TakeoverStatuses and TakeoverReasons are runfleet_work_taken_over_total's
// statuses and reasons, each present for every pool from the start: the
// statuses a claim holds an instance in, and how the work's abandonment was
// known (redelivery: a later delivery of the message that claimed it).
var (
	TakeoverStatuses = []string{string(runner.StatusCreating), string(runner.StatusDeleting)}
	TakeoverReasons  = []string{"redelivery"}
)

// ProviderBuckets bound provider call durations, in seconds: an API call
// answers in well under a second, a create that waits for a machine takes
// minutes.
var ProviderBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// ReconcileBuckets bound a reconcile pass's duration, in seconds.
var ReconcileBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120}

// Families lists every family, in the order an exporter shows them.
var Families = []Family{
	{Webhooks, "Webhook deliveries by event, workflow_job action and result.", Counter, []string{LabelEvent, LabelAction, LabelResult}, nil},
	{JobQueueSeconds, "Seconds from a job's queued event to each stage of getting its runner (created: provider create returned; online: runner reported idle; started: job in_progress on it).", Histogram, []string{LabelPool, LabelStage}, QueueBuckets},
	{JobsWaitingForCapacity, "Open jobs waiting for capacity: no live instance covers them (none made yet, or the one made is on its way out) and the pool is at max_runners; runfleet_jobs_waiting{reason=\"capacity\"}.", Gauge, []string{LabelPool}, nil},
	{JobsWaiting, "Jobs queued in GitHub and not started, by pool and what each waits for: the reason runfleet why and jobs list give (capacity, backoff, next_runner, runner_creating, …; docs/runbook.md lists them). Jobs no pool serves are runfleet_jobs_unmatched.", Gauge, []string{LabelPool, LabelReason}, nil},
	{OpenJobs, "Open jobs (queued in GitHub, wanting a runner) by how long they have waited.", Gauge, []string{LabelPool, LabelAge}, nil},
	{Instances, "Live instances by pool and status.", Gauge, []string{LabelPool, LabelStatus}, nil},
	{InstancesStuck, "Instances past the bound of their status (the reconciler recovers them).", Gauge, []string{LabelPool, LabelStatus}, nil},
	{ProviderOperations, "Provider calls by pool, operation and result.", Counter, []string{LabelPool, LabelOp, LabelResult}, nil},
	{ProviderOperationDuration, "Seconds a provider call took, by pool and operation.", Histogram, []string{LabelPool, LabelOp}, ProviderBuckets},
	{GitHubCalls, "Requests sent to GitHub by operation and result.", Counter, []string{LabelOperation, LabelResult}, nil},
	{GitHubRateLimitRemaining, "Requests left in the current rate-limit window, by installation (0 = token), as GitHub last reported it.", Gauge, []string{LabelInstallation}, nil},
	{GitHubAppRefused, "Owners and installations GitHub refuses the GitHub App on (403 to its installation look-up or its token, not a rate limit: suspended), by App id; 0 for an App it accepts. runfleet sends nothing through the App there until a recheck, after a minute, doubling up to 15.", Gauge, []string{LabelApp}, nil},
	{DeleteRetries, "Failed deletes scheduled to be tried again, by pool.", Counter, []string{LabelPool}, nil},
	{WorkTakenOver, "Creates and deletes a worker claimed and left without recording an outcome, taken over by another, by pool, status (creating, deleting) and reason (liveness: its holder's liveness record lapsed, a replica killed; claim_expired: past its claim's end, a Lambda invocation killed at its timeout; redelivery: a later delivery of the same message).", Counter, []string{LabelPool, LabelStatus, LabelReason}, nil},
	{WorkTakenOverAge, "Seconds since its claim that work taken over (runfleet_work_taken_over_total) held its instance in creating or deleting.", Histogram, []string{LabelPool, LabelStatus}, ProviderBuckets},
	{DeadLetters, "Work messages in the dead-letter store.", Gauge, nil, nil},
	{ReconcilePasses, "Reconcile passes by result.", Counter, []string{LabelResult}, nil},
	{ReconcilePassDuration, "Seconds a reconcile pass took.", Histogram, nil, ReconcileBuckets},
	{ReconcileActions, "What reconcile passes did, by action (a field of the reconcile report).", Counter, []string{LabelAction}, nil},
	{ReconcileLastPass, "Unix time the last reconcile pass finished (0: none yet).", Gauge, nil, nil},
	{JobsRefused, "Jobs given no machine, by pool and reason.", Counter, []string{LabelPool, LabelReason}, nil},
	{SpotInterruptions, "Spot interruption warnings for the pool's machines.", Counter, []string{LabelPool}, nil},
	{SpotBreakerOpen, "1 while the pool's spot circuit breaker is open (on-demand only), else 0.", Gauge, []string{LabelPool}, nil},
	{CapacityFailovers, "Creates moved to another subnet, instance type or on-demand, by pool and reason.", Counter, []string{LabelPool, LabelReason}, nil},
	{JobsUnmatched, "Jobs queued in GitHub that no pool serves, by reason (labels: no pool has all of their labels; owner: no pool serves where they run). runfleet why JOB says which labels.", Gauge, []string{LabelReason}, nil},
	{OldestWaitingJob, "Seconds the pool's oldest open job (wanting a runner, not started yet) has waited since GitHub queued it; 0 when none waits.", Gauge, []string{LabelPool}, nil},
	{PoolMaxRunners, "The pool's max_runners as configured: with runfleet_instances, how full the pool is.", Gauge, []string{LabelPool}, nil},
	{CostDollars, "What the pool's machines cost, in US dollars, counted as each instance is deleted (its price times the seconds it ran); instances of unknown price add nothing (runfleet cost counts them).", Counter, []string{LabelPool}, nil},
	{CostBudgetExceeded, "1 once the pool's cost this calendar month (UTC) passed its pools[].cost.monthly_budget_usd, else 0 (runfleet serve; on AWS the CostOverBudget alarm).", Gauge, []string{LabelPool}, nil},
	{ListenerPolls, "Polls of the pool's scale-set message session the Actions service answered, with a message or with an empty queue; none for 5 minutes is a listener that hears nothing (ListenerNotPollingAlarm).", Counter, []string{LabelPool}, nil},
	{ListenerSessionConflicts, "Message sessions the pool's scale-set listener could not create because another session holds the scale set (409): a live replica's, or a dead listener's GitHub has not expired yet.", Counter, []string{LabelPool}, nil},
	{ListenerLastPoll, "Unix time the Actions service last answered a poll of the pool's scale-set listener in this process, or when this process started the listener or took its lease, if later (runfleet serve; ListenerNotPollingAlarm takes the newest over every replica).", Gauge, []string{LabelPool}, nil},
	{WarmForecastPerMinute, "Jobs a minute the pool's forecast foretells for the coming half hour (pools[].warm; docs/warm-pools.md), set each reconcile pass: read beside the jobs that came.", Gauge, []string{LabelPool}, nil},
	{WarmForecastNeed, "Jobs the pool's forecast says must find a warm runner at once, set each reconcile pass (pools[].warm).", Gauge, []string{LabelPool}, nil},
	{WarmRunners, "Idle runners the reconciler keeps warm for the pool this pass: the forecast's size within min_idle, max_idle and max_runners (pools[].warm).", Gauge, []string{LabelPool}, nil},
	{WarmIdleSeconds, "Machine-seconds the pool's runners sat idle with no job, counted at each reconcile pass from the idle runners it found (pools[].warm): what warmth costs.", Counter, []string{LabelPool}, nil},
	{CacheLookups, "actions/cache lookups (GetCacheEntryDownloadURL) by result: hit or miss (runfleet serve with cache.dir or cache.s3; on AWS the metadata function, per invocation; docs/actions-cache.md).", Counter, []string{LabelResult}, nil},
	{CacheTransferBytes, "Bytes the actions/cache service took in (op=upload) and sent out (op=download); on AWS the sizes of the parts the metadata function presigned (upload only: restores go from S3 on presigned GETs).", Counter, []string{LabelOp}, nil},
	{CacheStoredBytes, "Bytes of the actions/cache entries kept now (finalized archives; eviction keeps it under cache.max_bytes). On AWS written by the reconciler after each eviction run (cache.evict_every).", Gauge, nil, nil},
	{CacheEntries, "actions/cache entries kept now (finalized).", Gauge, nil, nil},
	{BuildInfo, "1, labelled with the running build's version and commit (runfleet version).", Gauge, []string{LabelVersion, LabelCommit}, nil},
}

// WaitReasons are runfleet_jobs_waiting's reasons, each present for every
// pool: every reason a job of a pool can wait for (runner.JobWaits but
// unmatched, which has no pool).
var WaitReasons = func() []runner.JobWait {
	var out []runner.JobWait
	for _, w := range runner.JobWaits {
		if w != runner.WaitUnmatched {
			out = append(out, w)
		}
	}
	return out
}()

// UnmatchedReasons are runfleet_jobs_unmatched's reasons, each present
// from the start (runner.Unmatched*).
var UnmatchedReasons = []string{runner.UnmatchedLabels, runner.UnmatchedOwner}

// Build is the running binary's version stamp (runfleet version), for
// runfleet_build_info.
type Build struct {
	Version, Commit string
}

// EMFExtraSets are the dimension sets, besides [controller_id] and
// [controller_id, <all labels>], under which the Lambda functions declare a
// family: the alarms need a percentile per stage over every pool, and a
// provider failure share over every pool and operation, which neither the
// rollup (it mixes what they separate) nor the labelled series (one per
// pool) give.
var EMFExtraSets = map[string][][]string{
	JobQueueSeconds:    {{LabelStage}},
	ProviderOperations: {{LabelResult}},
}

// FamilyByName returns the family called name.
func FamilyByName(name string) (Family, bool) {
	for _, f := range Families {
		if f.Name == name {
			return f, true
		}
	}
	return Family{}, false
}
