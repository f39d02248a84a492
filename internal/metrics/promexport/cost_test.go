package promexport_test

import (
	"testing"

	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/metrics/promexport"
	"github.com/runfleet/runfleet/internal/runner"
)

// counter reads one series of a counter family (-1: not there).
func counter(t *testing.T, rec *promexport.Recorder, name, pool string) float64 {
	t.Helper()
	families, err := rec.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == pool {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

// Only a deleted instance's known cost is counted, once per change to
// deleted; the budget gauge follows what it is told.
func TestCostIsCountedAsInstancesAreDeleted(t *testing.T) {
	rec := promexport.New([]string{"linux"}, promexport.State{})
	if got := counter(t, rec, metrics.CostDollars, "linux"); got != 0 {
		t.Fatalf("cost before any delete = %v, want 0 (present from the start)", got)
	}
	gone := func(c *runner.Cost) *runner.Instance {
		return &runner.Instance{Name: "i", Pool: "linux", Status: runner.StatusDeleted, Cost: c}
	}
	rec.InstanceChanged(gone(&runner.Cost{USD: 0.25, Seconds: 60}), runner.StatusDeleting)
	rec.InstanceChanged(gone(&runner.Cost{Seconds: 60, Unknown: "no price"}), runner.StatusDeleting)
	rec.InstanceChanged(gone(nil), runner.StatusDeleting)
	rec.InstanceChanged(&runner.Instance{Name: "j", Pool: "linux", Status: runner.StatusRunning, Cost: &runner.Cost{USD: 9}}, runner.StatusCreating)
	rec.InstanceChanged(gone(&runner.Cost{USD: 0.5, Seconds: 120}), runner.StatusDeleting)
	if got := counter(t, rec, metrics.CostDollars, "linux"); got != 0.75 {
		t.Fatalf("cost = %v, want 0.75", got)
	}
	if got := gauge(t, rec, metrics.CostBudgetExceeded, map[string]string{"pool": "linux"}); got != 0 {
		t.Fatalf("budget exceeded = %v before any, want 0", got)
	}
	rec.BudgetExceeded("linux", true)
	if got := gauge(t, rec, metrics.CostBudgetExceeded, map[string]string{"pool": "linux"}); got != 1 {
		t.Fatalf("budget exceeded = %v, want 1", got)
	}
}
