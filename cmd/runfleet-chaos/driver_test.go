package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github/githubtest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers/external/externaltest"

	"github.com/cloudbase/garm-provider-common/params"
)

func testSettings() settings {
	return settings{seed: 99, jobs: 200, kills: 4, arrival: 24 * time.Second, maxRunners: 5, loseRate: 0.1}
}

func TestPlanIsSeededAndSpreadsKills(t *testing.T) {
	s := testSettings()
	a, b := newPlan(s), newPlan(s)
	if len(a.jobs) != s.jobs || len(a.kills) != s.kills {
		t.Fatalf("%d jobs, %d kills; want %d, %d", len(a.jobs), len(a.kills), s.jobs, s.kills)
	}
	seen := map[string]bool{}
	for i := range a.jobs {
		if *a.jobs[i] != *b.jobs[i] {
			t.Fatalf("job %d differs between two plans of one seed: %+v vs %+v", i, a.jobs[i], b.jobs[i])
		}
		if a.jobs[i].arriveAt > s.arrival || (i > 0 && a.jobs[i].arriveAt < a.jobs[i-1].arriveAt) {
			t.Errorf("job %d arrives at %s: outside the window or out of order", i, a.jobs[i].arriveAt)
		}
		for _, id := range a.jobs[i].delivery {
			if seen[id] || len(id) != 36 {
				t.Errorf("delivery id %q repeated or not a GUID", id)
			}
			seen[id] = true
		}
	}
	if !slices.Equal(a.kills, b.kills) {
		t.Errorf("kills differ between two plans of one seed")
	}
	slot := (s.arrival + killWindowEnd - 3*time.Second) / time.Duration(s.kills)
	for i, k := range a.kills {
		if k.at < 3*time.Second+time.Duration(i)*slot || k.at > 3*time.Second+time.Duration(i+1)*slot {
			t.Errorf("kill %d at %s is outside its slot", i, k.at)
		}
	}
	s.seed++
	if c := newPlan(s); slices.Equal(a.kills, c.kills) {
		t.Error("another seed planned the same kills")
	}
}

// observed is an observation of a run where everything went right, for
// the checks to be broken one way at a time.
func observed() *observation {
	return &observation{
		jobs:    []job{{id: 1, served: 1}, {id: 2, served: 1}},
		history: externaltest.History{PeakLive: map[string]int{"p": 5}, PeakAt: map[string]time.Time{"p": {}}},
		records: map[string]*runner.Instance{},
	}
}

func TestCheckFindsEachViolation(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(*observation, *report)
		want  string
		// more counts the other violations the spoiling causes too.
		more int
	}{
		{"clean", func(*observation, *report) {}, "", 0},
		{"never served", func(o *observation, _ *report) { o.jobs[0].served = 0 }, "never served: (1)", 0},
		{"served twice", func(o *observation, _ *report) { o.jobs[1].served = 2 }, "served 2+ times: (2)", 0},
		{"interrupted", func(o *observation, _ *report) { o.jobs[0].interrupted = true }, "busy runner: (1)", 0},
		{"two live machines in history", func(o *observation, _ *report) { o.history.TwiceLive = []string{"runfleet-x"} }, "two live machines at once: (runfleet-x)", 0},
		{"two live machines at the end", func(o *observation, _ *report) {
			o.cloud.Machines = []externaltest.Machine{{Instance: params.ProviderInstance{Name: "runfleet-y", ProviderID: "1"}}, {Instance: params.ProviderInstance{Name: "runfleet-y", ProviderID: "2"}}}
		}, "two live machines at once: (runfleet-y)", 1},
		{"leak", func(o *observation, _ *report) {
			o.cloud.Machines = []externaltest.Machine{{Instance: params.ProviderInstance{Name: "runfleet-z"}}}
		}, "1 machine(s) leaked", 0},
		{"stuck", func(o *observation, _ *report) { o.live = []*runner.Instance{{Name: "runfleet-s"}} }, "1 record(s) stuck", 0},
		{"peak", func(o *observation, _ *report) { o.history.PeakLive["p"] = 6 }, "peak of 6 live machines exceeds max_runners 5", 0},
		{"runner left", func(o *observation, _ *report) { o.runners = []githubtest.Runner{{Name: "runfleet-r"}} }, "still registered in GitHub", 0},
		{"unanswered", func(o *observation, _ *report) { o.send.outstanding = 3 }, "3 delivery(ies) never answered 2xx", 0},
		{"lost, not recovered", func(o *observation, _ *report) {
			o.deliveries.lost = map[string]string{"g-1": "queued", "g-2": "completed"}
			o.deliveries.recovered = map[string]bool{"g-2": true}
		}, "1 delivery(ies) lost (no attempt delivered) and never recovered from the delivery log: (g-1 (queued))", 0},
		{"crash", func(_ *observation, r *report) { r.crashes = []*serveRun{{n: 2, waitErr: errors.New("exit status 2")}} }, "serve #2 exited by itself", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := observed()
			r := &report{settings: testSettings(), obs: o}
			tc.spoil(o, r)
			r.check()
			if tc.want == "" {
				if len(r.violations) != 0 {
					t.Fatalf("violations in a clean run: %v", r.violations)
				}
				return
			}
			if len(r.violations) != 1+tc.more || !strings.Contains(r.violations[0], tc.want) {
				t.Fatalf("violations %q; want %d, the first containing %q", r.violations, 1+tc.more, tc.want)
			}
			var out strings.Builder
			r.print(&out)
			if !strings.Contains(out.String(), fmt.Sprintf("RESULT: %d violation(s)", 1+tc.more)) {
				t.Errorf("report does not end in the violation:\n%s", out.String())
			}
		})
	}
}

func TestRunnerAgentID(t *testing.T) {
	for in, want := range map[string]string{
		`{"agentId": 1042, "agentName": "runfleet-x"}`: "1042",
		"eyJhZ2VudElkIjogNyB9":                         "7", // base64 of {"agentId": 7 }
		`{"agentName": "no id"}`:                       "null",
		`not json`:                                     "null",
	} {
		if got := runnerAgentID([]byte(in)); got != want {
			t.Errorf("runnerAgentID(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestFlagsAreCheckedAndReplayNamesTheSeed(t *testing.T) {
	if code := run([]string{"-fail-rate", "1.5"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("-fail-rate 1.5: exit %d, want 2", code)
	}
	if code := run([]string{"-timeout", "10s"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("-timeout 10s: exit %d, want 2", code)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Int("jobs", 1000, "")
	fs.Uint64("seed", 0, "")
	fs.String("out", "", "")
	if err := fs.Parse([]string{"-jobs", "100", "-out", "/tmp/x"}); err != nil {
		t.Fatal(err)
	}
	if got, want := replayCommand(fs, 12), "go run ./cmd/runfleet-chaos -jobs=100 -seed=12"; got != want {
		t.Errorf("replay = %q, want %q", got, want)
	}
}
