package infra

import (
	"slices"
	"sort"
	"strings"

	"github.com/runfleet/runfleet/internal/metrics"
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
// operations by result.
//
// It is derived from the emitter's vocabulary (internal/metrics, whose
// tests check the EMF lines against it): an alarm on a name or dimension set
// nobody publishes has no data, which every alarm here but
// ReconcilerNotRunningAlarm treats as OK, so it would never fire.
var emittedDimensionSets = lambdaDimensionSets()

// notEmittedOnLambda are the families only serve exports: the reconciler
// cannot read the dead-letter queue (its SQS metric counts it instead),
// the month-to-date budget watch is serve's (CostOverBudgetAlarm reads
// runfleet_cost_dollars_total on AWS), and a listener's last-poll clock
// outlives no invocation (ListenerNotPollingAlarm sums the polls on AWS).
var notEmittedOnLambda = []string{metrics.DeadLetters, metrics.CostBudgetExceeded, metrics.ListenerLastPoll,
	// The actions/cache service runs in serve only (no AWS path yet).
	metrics.CacheLookups, metrics.CacheTransferBytes, metrics.CacheStoredBytes, metrics.CacheEntries}

// lambdaDimensionSets derives the sets from the emitter's own vocabulary
// (internal/metrics), so the alarms cannot drift from what is published.
func lambdaDimensionSets() map[string][][]string {
	out := map[string][][]string{}
	for _, f := range metrics.Families {
		if slices.Contains(notEmittedOnLambda, f.Name) {
			continue
		}
		sets := [][]string{{metrics.LabelControllerID}}
		if len(f.Labels) > 0 {
			sets = append(sets, sortedSet(append([]string{metrics.LabelControllerID}, f.Labels...)))
		}
		for _, extra := range metrics.EMFExtraSets[f.Name] {
			sets = append(sets, sortedSet(append([]string{metrics.LabelControllerID}, extra...)))
		}
		out[f.Name] = sets
	}
	return out
}

func sortedSet(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
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
