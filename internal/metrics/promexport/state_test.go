package promexport_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github/rest"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/metrics/promexport"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/bolt"
)

// The recorder reads the store it is given at every scrape; the stuck
// gauges count nothing until the engine's rule is handed over, and by that
// rule after.
func TestRecorderReadsTheStoreAndCountsStuckByTheGivenRule(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	at := time.Now().Add(-time.Hour)
	inst := &runner.Instance{
		Name: runner.InstanceName("p", 1, 1), Pool: "p", Status: runner.StatusPendingCreate,
		RunnerStatus: runner.RunnerPending, JobID: 1, RunAttempt: 1, Owner: runner.Owner{Org: "octo-org"},
		Labels: []string{"self-hosted"}, CreatedAt: at, UpdatedAt: at, StatusChangedAt: at,
	}
	if err := st.CreateInstance(context.Background(), store.Admission{Instance: inst, MaxRunners: 1}); err != nil {
		t.Fatal(err)
	}
	rec := promexport.New([]string{"p"}, promexport.State{Store: st})
	labels := map[string]string{"pool": "p", "status": string(runner.StatusPendingCreate)}

	if got := gauge(t, rec, metrics.Instances, labels); got != 1 {
		t.Errorf("%s = %v, want the stored instance counted", metrics.Instances, got)
	}
	if got := gauge(t, rec, metrics.InstancesStuck, labels); got != 0 {
		t.Errorf("%s = %v before any rule, want 0", metrics.InstancesStuck, got)
	}
	rec.CountStuck(func(i *runner.Instance, now time.Time) bool { return now.Sub(i.StatusChangedAt) > time.Minute })
	if got := gauge(t, rec, metrics.InstancesStuck, labels); got != 1 {
		t.Errorf("%s = %v under the rule, want 1", metrics.InstancesStuck, got)
	}
}

// gauge gathers rec and returns the value of family name's series with
// exactly labels (-1 when there is none).
func gauge(t *testing.T, rec *promexport.Recorder, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := rec.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// refusingGitHub is a GitHub client of two Apps, GitHub refusing the
// second on one owner.
type refusingGitHub struct{}

func (refusingGitHub) Calls() rest.CallCounts               { return rest.CallCounts{} }
func (refusingGitHub) RateLimits() map[int64]rest.RateLimit { return nil }
func (refusingGitHub) AppRefusals() map[int64]int           { return map[int64]int{100: 0, 101: 1} }

// Each App of the client has its runfleet_github_app_refused series: 0
// while GitHub accepts it, else what GitHub refuses it on.
func TestRecorderShowsTheAppsGitHubRefuses(t *testing.T) {
	rec := promexport.New([]string{"p"}, promexport.State{GitHub: refusingGitHub{}})
	for app, want := range map[string]float64{"100": 0, "101": 1} {
		if got := gauge(t, rec, metrics.GitHubAppRefused, map[string]string{metrics.LabelApp: app}); got != want {
			t.Errorf("%s{app=%s} = %v, want %v", metrics.GitHubAppRefused, app, got, want)
		}
	}
}
