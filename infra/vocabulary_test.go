package infra

import (
	"slices"
	"sort"
	"strings"
)

// metricsNamespace is where the functions' EMF lines put runfleet's own
// metrics.
const metricsNamespace = "runfleet"

// emittedDimensionSets is the metric vocabulary the Lambda functions publish
// as EMF, as the alarms and the dashboard may rely on it: each metric name
// and the dimension sets it is published under. Every metric has the rollup
// [controller_id]; most also [controller_id, <its labels>]. Two carry one
// more set the alarms need, because a percentile or a ratio cannot be taken
// over a rollup that mixes what they separate: queue time by stage, provider
// operations by result. A metric whose labels nothing here depends on is
// listed with its rollup only.
//
// The list is kept by hand on purpose: an alarm on a name or dimension set
// nobody publishes has no data, which every alarm here but
// ReconcilerNotRunningAlarm treats as OK, so it would never fire.
var emittedDimensionSets = map[string][][]string{
	"runfleet_job_queue_seconds":               {{"controller_id"}, {"controller_id", "pool", "stage"}, {"controller_id", "stage"}},
	"runfleet_jobs_waiting_for_capacity":       {{"controller_id"}, {"controller_id", "pool"}},
	"runfleet_instances_stuck":                 {{"controller_id"}, {"controller_id", "pool", "status"}},
	"runfleet_provider_operations_total":       {{"controller_id"}, {"controller_id", "op", "pool", "result"}, {"controller_id", "result"}},
	"runfleet_reconcile_passes_total":          {{"controller_id"}, {"controller_id", "result"}},
	"runfleet_github_rate_limit_remaining":     {{"controller_id"}, {"controller_id", "installation"}},
	"runfleet_webhooks_total":                  {{"controller_id"}, {"action", "controller_id", "event", "result"}},
	"runfleet_instances":                       {{"controller_id"}, {"controller_id", "pool", "status"}},
	"runfleet_open_jobs":                       {{"controller_id"}},
	"runfleet_dead_letters":                    {{"controller_id"}},
	"runfleet_delete_retries_total":            {{"controller_id"}},
	"runfleet_reconcile_pass_duration_seconds": {{"controller_id"}},
	"runfleet_spot_interruptions_total":        {{"controller_id"}},
	"runfleet_jobs_refused_total":              {{"controller_id"}},
}

// isEmittedSet reports whether metric is published under exactly the
// dimension names dims (in any order).
func isEmittedSet(metric string, dims []string) bool {
	want := slices.Clone(dims)
	sort.Strings(want)
	for _, set := range emittedDimensionSets[metric] {
		if slices.Equal(set, want) {
			return true
		}
	}
	return false
}

// emittedSetsString lists a metric's dimension sets for error messages.
func emittedSetsString(metric string) string {
	var out []string
	for _, set := range emittedDimensionSets[metric] {
		out = append(out, "["+strings.Join(set, ", ")+"]")
	}
	return strings.Join(out, " ")
}
