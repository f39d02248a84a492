package metrics_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

// Every name follows Prometheus' conventions, and each family is declared
// once with the labels its Recorder methods fill.
func TestFamiliesFollowPrometheusNaming(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range metrics.Families {
		if seen[f.Name] {
			t.Errorf("%s declared twice", f.Name)
		}
		seen[f.Name] = true
		if !strings.HasPrefix(f.Name, "runfleet_") {
			t.Errorf("%s lacks the runfleet_ prefix", f.Name)
		}
		if (f.Kind == metrics.Counter) != strings.HasSuffix(f.Name, "_total") {
			t.Errorf("%s: counters, and only counters, end in _total", f.Name)
		}
		if f.Kind == metrics.Histogram && (!strings.HasSuffix(f.Name, "_seconds") || !slices.IsSorted(f.Buckets) || len(f.Buckets) == 0) {
			t.Errorf("%s: a histogram of seconds with sorted buckets", f.Name)
		}
		if f.Help == "" {
			t.Errorf("%s has no help", f.Name)
		}
	}
	if len(metrics.Families) != 41 {
		t.Errorf("%d families, want the 41 of the vocabulary", len(metrics.Families))
	}
}

// The reconcile action labels are the report's counters, by their JSON
// names, so the metric and the API's report say the same thing.
func TestReconcileActionsAreTheReportsCounters(t *testing.T) {
	rep := engine.ReconcileReport{Examined: 3, CreatesResent: 1, WarmCreated: 2, Live: []engine.LiveCount{{Pool: "p", Count: 9}}}
	// Every counter non-zero, so none is left out of the JSON by omitempty.
	counters := reflect.ValueOf(&rep).Elem()
	for i := range counters.NumField() {
		if f := counters.Field(i); f.Kind() == reflect.Int && f.Int() == 0 {
			f.SetInt(int64(i + 10))
		}
	}
	raw, _ := json.Marshal(rep)
	var fields map[string]any
	_ = json.Unmarshal(raw, &fields)
	delete(fields, "live")
	var names []string
	for k := range fields {
		names = append(names, k)
	}
	slices.Sort(names)
	got := slices.Sorted(slices.Values(metrics.ReconcileActionNames))
	if !slices.Equal(got, names) {
		t.Fatalf("actions %v, want the report's counters %v", got, names)
	}
	counts := metrics.ReconcileActionCounts(rep)
	for i, name := range metrics.ReconcileActionNames {
		if want := fields[name].(float64); float64(counts[i]) != want {
			t.Errorf("%s = %d, want %v", name, counts[i], want)
		}
	}
}

func TestClassifyWebhook(t *testing.T) {
	cases := []struct {
		event  string
		status int
		body   string
		want   [3]string
	}{
		{"workflow_job", 200, `{"status":"processed","action":"queued","result":"instance_created"}`, [3]string{"workflow_job", "queued", "accepted"}},
		{"workflow_job", 200, `{"status":"processed","action":"requested"}`, [3]string{"workflow_job", "other", "accepted"}},
		{"ping", 200, `{"status":"pong"}`, [3]string{"ping", "none", "ignored"}},
		{"push", 200, `{"status":"ignored"}`, [3]string{"other", "none", "ignored"}},
		{"workflow_job", 401, `{"status":"rejected"}`, [3]string{"workflow_job", "none", "bad_signature"}},
		{"workflow_job", 413, `{"status":"rejected"}`, [3]string{"workflow_job", "none", "too_large"}},
		{"workflow_job", 400, `{"status":"rejected"}`, [3]string{"workflow_job", "none", "bad_request"}},
		{"workflow_job", 405, ``, [3]string{"workflow_job", "none", "bad_request"}},
		{"workflow_job", 500, `{"status":"failed","action":"queued"}`, [3]string{"workflow_job", "queued", "error"}},
		{strings.Repeat("x", 500), 401, `not json`, [3]string{"other", "none", "bad_signature"}},
	}
	for _, c := range cases {
		e, a, r := metrics.ClassifyWebhook(c.event, c.status, []byte(c.body))
		if got := [3]string{e, a, r}; got != c.want {
			t.Errorf("%.20s %d %s = %v, want %v", c.event, c.status, c.body, got, c.want)
		}
	}
}

func TestAgeOf(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "lt_1m", 59 * time.Second: "lt_1m", time.Minute: "1m_to_10m", 10 * time.Minute: "10m_to_1h",
		time.Hour - time.Nanosecond: "10m_to_1h", time.Hour: "ge_1h", 48 * time.Hour: "ge_1h",
	} {
		if got := metrics.AgeOf(d); got != want {
			t.Errorf("AgeOf(%s) = %s, want %s", d, got, want)
		}
	}
}

// The fleet gauges have every key of every configured pool, count live
// instances and stuck ones, open demand by age, and each job by what it
// waits for (runner.WaitOf): pool p holds 3 of its 3 slots, so the jobs
// nothing covers wait for capacity; a job waiting for approval wants no
// runner.
func TestMeasureFleet(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	live := []*runner.Instance{
		{Name: "a", Pool: "p", Status: runner.StatusRunning},
		{Name: "b", Pool: "p", Status: runner.StatusCreating},
		{Name: "c", Pool: "gone", Status: runner.StatusPendingDelete},
		{Name: "d", Pool: "p", Status: runner.StatusPendingDelete},
	}
	open := []*runner.Job{
		{ID: 1, Pool: "p", Status: runner.JobOpen, Instance: "b", QueuedAt: now.Add(-30 * time.Second)},
		{ID: 2, Pool: "p", Status: runner.JobOpen, QueuedAt: now.Add(-2 * time.Hour)},
		{ID: 3, Pool: "p", Status: runner.JobWaiting, QueuedAt: now.Add(-5 * time.Minute)},
		// Names its previous instance, on its way out: it waits for capacity.
		{ID: 4, Pool: "p", Status: runner.JobOpen, Instance: "d", QueuedAt: now.Add(-20 * time.Second)},
		{ID: 5, Status: runner.JobUnmatched, UnmatchedReason: runner.UnmatchedLabels, QueuedAt: now.Add(-3 * time.Hour)},
	}
	stuck := func(inst *runner.Instance, _ time.Time) bool { return inst.Status == runner.StatusCreating }
	f := metrics.MeasureFleet([]metrics.PoolLimit{{Name: "p", MaxRunners: 3}, {Name: "q", MaxRunners: 1}}, live, open, now, stuck)
	if !reflect.DeepEqual(f.Pools, []string{"gone", "p", "q"}) {
		t.Errorf("pools %v: the configured ones and any met in the records", f.Pools)
	}
	for key, want := range map[metrics.PoolStatus]int{
		{Pool: "p", Status: runner.StatusRunning}: 1, {Pool: "p", Status: runner.StatusCreating}: 1, {Pool: "p", Status: runner.StatusPendingDelete}: 1,
		{Pool: "gone", Status: runner.StatusPendingDelete}: 1, {Pool: "q", Status: runner.StatusRunning}: 0,
	} {
		if got, ok := f.Instances[key]; !ok || got != want {
			t.Errorf("instances %v = %d (present %t), want %d", key, got, ok, want)
		}
	}
	if f.Stuck[metrics.PoolStatus{Pool: "p", Status: runner.StatusCreating}] != 1 || f.Stuck[metrics.PoolStatus{Pool: "p", Status: runner.StatusRunning}] != 0 {
		t.Errorf("stuck %v", f.Stuck)
	}
	if len(f.Instances) != 3*len(runner.AllStatuses) || len(f.OpenJobs) != 3*len(metrics.OpenJobAges) {
		t.Errorf("not every key present: %d instance keys, %d open-job keys", len(f.Instances), len(f.OpenJobs))
	}
	for key, want := range map[metrics.PoolAge]int{{Pool: "p", Age: "lt_1m"}: 2, {Pool: "p", Age: "ge_1h"}: 1, {Pool: "p", Age: "1m_to_10m"}: 0} {
		if got := f.OpenJobs[key]; got != want {
			t.Errorf("open jobs %v = %d, want %d", key, got, want)
		}
	}
	if f.Waiting["p"] != 2 || f.Waiting["q"] != 0 {
		t.Errorf("waiting %v, want p:2 (job 2 has no instance, job 4's is pending_delete) q:0", f.Waiting)
	}
	if len(f.Waits) != 3*len(metrics.WaitReasons) {
		t.Errorf("not every key present: %d waiting-reason keys", len(f.Waits))
	}
	for key, want := range map[metrics.PoolWait]int{
		{Pool: "p", Wait: runner.WaitCapacity}: 2, {Pool: "p", Wait: runner.WaitCreating}: 1, {Pool: "p", Wait: runner.WaitApproval}: 1,
		{Pool: "p", Wait: runner.WaitBackoff}: 0, {Pool: "q", Wait: runner.WaitCapacity}: 0,
	} {
		if got := f.Waits[key]; got != want {
			t.Errorf("waits %v = %d, want %d", key, got, want)
		}
	}
	if f.OldestWaiting["p"] != 7200 || f.OldestWaiting["q"] != 0 {
		t.Errorf("oldest waiting %v, want p:7200 (job 2) q:0", f.OldestWaiting)
	}
	if f.MaxRunners["p"] != 3 || f.MaxRunners["q"] != 1 || f.MaxRunners["gone"] != 0 {
		t.Errorf("max runners %v", f.MaxRunners)
	}
	if f.Unmatched[runner.UnmatchedLabels] != 1 || f.Unmatched[runner.UnmatchedOwner] != 0 || len(f.Unmatched) != 2 {
		t.Errorf("unmatched %v, want labels:1 owner:0", f.Unmatched)
	}
}

// The provider decorator counts every call by pool, operation and result;
// "not found" is an answer, and a create that returned a machine in error
// is a failure.
func TestObserveProvidersCountsCalls(t *testing.T) {
	rec := &calls{}
	sim := simulated.NewWithOptions(simulated.Options{})
	p := metrics.ObserveProviders(map[string]providers.Provider{"p": sim}, rec)["p"]
	create := func(name string) {
		_, _ = p.CreateInstance(t.Context(), providers.CreateRequest{Name: name, PoolID: "pool-id"})
	}
	create("ok")
	sim.SetFaults(simulated.Faults{AlwaysFailCreate: true, FailCreateAsStatus: true})
	create("error-status")
	_, _ = p.GetInstance(t.Context(), "gone")
	sim.SetFaults(simulated.Faults{AlwaysFailDelete: true})
	_ = p.DeleteInstance(t.Context(), "error-status")
	sim.SetFaults(simulated.Faults{})
	_ = p.DeleteInstance(t.Context(), "error-status")
	_, _ = p.ListInstances(t.Context(), "pool-id")
	_ = p.StartInstance(t.Context(), "ok")
	_ = p.StopInstance(t.Context(), "ok")
	_ = p.RemoveAllInstances(t.Context())
	want := []string{"p create ok", "p create error", "p get ok", "p delete error", "p delete ok", "p list ok", "p start ok", "p stop ok", "p remove_all ok"}
	if !slices.Equal(rec.seen, want) {
		t.Fatalf("recorded %v, want %v", rec.seen, want)
	}
}

type calls struct {
	metrics.Nop
	seen []string
}

func (c *calls) ProviderCalled(pool, op string, err error, _ time.Duration) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	c.seen = append(c.seen, pool+" "+op+" "+result)
}

// A provider with facts of its own gets the recorder when it is observed.
func TestObserveProvidersHandsReportersTheRecorder(t *testing.T) {
	rec := &calls{}
	p := &reportingProvider{Provider: simulated.NewWithOptions(simulated.Options{})}
	metrics.ObserveProviders(map[string]providers.Provider{"p": p}, rec)
	if p.rec != rec {
		t.Fatalf("provider got recorder %v, want the one observing it", p.rec)
	}
}

type reportingProvider struct {
	providers.Provider
	rec metrics.Recorder
}

func (r *reportingProvider) ReportTo(rec metrics.Recorder) { r.rec = rec }
