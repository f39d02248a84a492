package metrics_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
)

type emfDoc struct {
	AWS struct {
		CloudWatchMetrics []struct {
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
	fields map[string]any
}

func emfDocs(t *testing.T, out string) []emfDoc {
	t.Helper()
	var docs []emfDoc
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var d emfDoc
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal([]byte(line), &d.fields)
		docs = append(docs, d)
	}
	return docs
}

// Units follow the names: seconds for durations, a count for counters and
// gauges, none for the last pass's timestamp; a reason outside the known
// set is "other", so a caller cannot grow the number of series.
func TestEMFUnitsAndBoundedLabels(t *testing.T) {
	var out bytes.Buffer
	clock := testclock.At(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	pinned := clock.Now()
	e := metrics.NewEMF(&out, "ctl").WithClock(clock.Now)
	e.JobWaited("p", engine.StageCreated, 1500*time.Millisecond)
	e.DeleteRetried("p")
	e.ReconcilePassed(engine.ReconcileReport{Examined: 2}, time.Second)
	e.JobRefused("p", "made up by a caller")
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	units := map[string]string{}
	for _, d := range emfDocs(t, out.String()) {
		for _, directive := range d.AWS.CloudWatchMetrics {
			for _, m := range directive.Metrics {
				units[m.Name] = m.Unit
			}
		}
		if d.fields[metrics.LabelReason] != nil && d.fields[metrics.LabelReason] != metrics.Other {
			t.Errorf("reason %v, want %q", d.fields[metrics.LabelReason], metrics.Other)
		}
		if d.fields[metrics.ReconcileLastPass] != nil && d.fields[metrics.ReconcileLastPass] != float64(pinned.Unix()) {
			t.Errorf("last pass %v, want %d", d.fields[metrics.ReconcileLastPass], pinned.Unix())
		}
	}
	for name, want := range map[string]string{
		metrics.JobQueueSeconds: "Seconds", metrics.DeleteRetries: "Count", metrics.ReconcilePassDuration: "Seconds",
		metrics.ReconcileActions: "Count", metrics.ReconcileLastPass: "None", metrics.JobsRefused: "Count",
	} {
		if units[name] != want {
			t.Errorf("%s unit %q, want %q", name, units[name], want)
		}
	}
}

// A quiet fleet still gives each gauge's rollup one point per pass (0), and
// no labelled series; a busy one gives labelled points whose rollup sum is
// the total.
func TestEMFFleetGauges(t *testing.T) {
	var out bytes.Buffer
	e := metrics.NewEMF(&out, "ctl")
	e.Fleet(metrics.MeasureFleet([]metrics.PoolLimit{{Name: "p"}, {Name: "q"}}, nil, nil, time.Now(), nil))
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	docs := emfDocs(t, out.String())
	if len(docs) != 1 {
		t.Fatalf("%d documents for a quiet fleet, want 1 (the rollups)", len(docs))
	}
	for _, name := range []string{metrics.Instances, metrics.InstancesStuck, metrics.OpenJobs, metrics.JobsWaitingForCapacity,
		metrics.JobsUnmatched, metrics.OldestWaitingJob} {
		if docs[0].fields[name] != float64(0) {
			t.Errorf("%s = %v, want 0", name, docs[0].fields[name])
		}
	}
	if sets := docs[0].AWS.CloudWatchMetrics[0].Dimensions; len(sets) != 1 || len(sets[0]) != 1 || sets[0][0] != metrics.LabelControllerID {
		t.Errorf("dimension sets %v, want only [controller_id]", sets)
	}
}

// A deleted instance's known cost is one sample of dollars (no unit) under
// its pool; an unknown cost writes nothing.
func TestEMFWritesTheCostOfADeletedInstance(t *testing.T) {
	var out bytes.Buffer
	e := metrics.NewEMF(&out, "ctl")
	e.InstanceChanged(&runner.Instance{Name: "i", Pool: "linux", Status: runner.StatusDeleted, Cost: &runner.Cost{USD: 0.1248, Seconds: 5400}}, runner.StatusDeleting)
	e.InstanceChanged(&runner.Instance{Name: "j", Pool: "linux", Status: runner.StatusDeleted, Cost: &runner.Cost{Unknown: "no price"}}, runner.StatusDeleting)
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	docs := emfDocs(t, out.String())
	if len(docs) != 1 || docs[0].fields[metrics.CostDollars] != 0.1248 || docs[0].fields[metrics.LabelPool] != "linux" {
		t.Fatalf("EMF = %s", out.String())
	}
	if m := docs[0].AWS.CloudWatchMetrics[0].Metrics[0]; m.Name != metrics.CostDollars || m.Unit != "None" {
		t.Fatalf("metric = %+v, want %s in None", m, metrics.CostDollars)
	}
}

// A listener invocation writes its answered polls and its session
// conflicts under the pool, and one 0 on the polls' rollup, so that the
// rollup's Sum is the polls answered — 0 when none was, rather than no
// data; the last-poll gauge is serve's only.
func TestEMFListenerPollsAndConflicts(t *testing.T) {
	var out bytes.Buffer
	e := metrics.NewEMF(&out, "ctl")
	e.ListenersScheduled()
	e.ListenerListening("linux")
	e.ListenerSessionConflict("linux")
	e.ListenerPolled("linux")
	e.ListenerPolled("linux")
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	got := extractedSeries(t, out.String())
	total := func(key string) (n float64) {
		for _, v := range got[key] {
			n += v
		}
		return n
	}
	for key, want := range map[string]float64{
		metrics.ListenerPolls + "{controller_id=ctl,pool=linux}":            2,
		metrics.ListenerPolls + "{controller_id=ctl}":                       2,
		metrics.ListenerSessionConflicts + "{controller_id=ctl,pool=linux}": 1,
		metrics.ListenerSessionConflicts + "{controller_id=ctl}":            1,
	} {
		if n := total(key); n != want {
			t.Errorf("%s sums to %v, want %v (all: %v)", key, n, want, got)
		}
	}
	if n := len(got[metrics.ListenerPolls+"{controller_id=ctl}"]); n != 3 {
		t.Errorf("the polls' rollup has %d samples, want 3 (the invocation's 0 and two polls)", n)
	}
	for key := range got {
		if strings.HasPrefix(key, metrics.ListenerLastPoll) {
			t.Errorf("%s written on Lambda", key)
		}
	}

	out.Reset()
	e.ListenersScheduled()
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	got = extractedSeries(t, out.String())
	if len(got) != 1 || len(got[metrics.ListenerPolls+"{controller_id=ctl}"]) != 1 || total(metrics.ListenerPolls+"{controller_id=ctl}") != 0 {
		t.Errorf("an invocation that heard nothing wrote %v, want one 0 on the polls' rollup", got)
	}
}
