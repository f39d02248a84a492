package metrics_test

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/metrics"
)

// extractedSeries reads EMF lines as CloudWatch does: every value of each
// declared metric under each of its directive's dimension sets, keyed
// metric{name=value,…} with the names sorted. A metric declared twice in
// one line fails the test.
func extractedSeries(t *testing.T, out string) map[string][]float64 {
	t.Helper()
	got := map[string][]float64{}
	for _, d := range emfDocs(t, out) {
		declared := map[string]bool{}
		for _, directive := range d.AWS.CloudWatchMetrics {
			for _, m := range directive.Metrics {
				if declared[m.Name] {
					t.Errorf("%s declared twice in one line", m.Name)
				}
				declared[m.Name] = true
				var values []float64
				switch v := d.fields[m.Name].(type) {
				case float64:
					values = []float64{v}
				case []any:
					for _, x := range v {
						values = append(values, x.(float64))
					}
				}
				for _, set := range directive.Dimensions {
					names := slices.Clone(set)
					sort.Strings(names)
					parts := make([]string, len(names))
					for i, n := range names {
						parts[i] = n + "=" + d.fields[n].(string)
					}
					k := m.Name + "{" + strings.Join(parts, ",") + "}"
					got[k] = append(got[k], values...)
				}
			}
		}
	}
	return got
}

// A worker invocation (two queue-time samples, a create and its duration,
// a failed delete, GitHub calls and the rate limit) is one EMF line for
// what agrees and one more for the failed delete, and CloudWatch extracts
// every series the vocabulary publishes, with every sample: the
// queue-time p95 alarm sees both samples under [controller_id, stage].
func TestEMFInvocationMergesAndKeepsEverySeries(t *testing.T) {
	var out bytes.Buffer
	e := metrics.NewEMF(&out, "ctl")
	e.JobWaited("linux", engine.StageCreated, 2*time.Second)
	e.JobWaited("linux", engine.StageCreated, 4*time.Second)
	e.ProviderCalled("linux", "create", nil, 500*time.Millisecond)
	e.ProviderCalled("linux", "delete", errors.New("throttled"), 250*time.Millisecond)
	e.GitHubCalls("GenerateJITConfig", "ok", 1)
	e.GitHubRateLimitRemaining("0", 4990)
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "\n"); n != 2 {
		t.Errorf("%d lines, want 2 (the error result and the delete cannot share the first):\n%s", n, out.String())
	}
	want := map[string][]float64{
		"runfleet_job_queue_seconds{controller_id=ctl}":                                           {2, 4},
		"runfleet_job_queue_seconds{controller_id=ctl,pool=linux,stage=created}":                  {2, 4},
		"runfleet_job_queue_seconds{controller_id=ctl,stage=created}":                             {2, 4},
		"runfleet_provider_operations_total{controller_id=ctl}":                                   {1, 1},
		"runfleet_provider_operations_total{controller_id=ctl,op=create,pool=linux,result=ok}":    {1},
		"runfleet_provider_operations_total{controller_id=ctl,op=delete,pool=linux,result=error}": {1},
		"runfleet_provider_operations_total{controller_id=ctl,result=ok}":                         {1},
		"runfleet_provider_operations_total{controller_id=ctl,result=error}":                      {1},
		"runfleet_provider_operation_duration_seconds{controller_id=ctl}":                         {0.5, 0.25},
		"runfleet_provider_operation_duration_seconds{controller_id=ctl,op=create,pool=linux}":    {0.5},
		"runfleet_provider_operation_duration_seconds{controller_id=ctl,op=delete,pool=linux}":    {0.25},
		"runfleet_github_calls_total{controller_id=ctl}":                                          {1},
		"runfleet_github_calls_total{controller_id=ctl,operation=GenerateJITConfig,result=ok}":    {1},
		"runfleet_github_rate_limit_remaining{controller_id=ctl}":                                 {4990},
		"runfleet_github_rate_limit_remaining{controller_id=ctl,installation=0}":                  {4990},
	}
	got := extractedSeries(t, out.String())
	for _, m := range []map[string][]float64{want, got} {
		for _, v := range m {
			slices.Sort(v)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("extracted series\n got %v\nwant %v", got, want)
	}
}
