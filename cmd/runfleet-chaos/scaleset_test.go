package main

import (
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
	"github.com/runfleet/runfleet/internal/runner"
)

func TestRelistenTimesMeasureEachRestartToItsFirstAnsweredPoll(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	kills := []killRecord{{restartedAt: at(10)}, {restartedAt: at(20)}, {restartedAt: at(100)}, {restartedAt: at(200)}}
	calls := []scalesettest.Call{
		{Op: scalesettest.OpGetMessage, Status: http.StatusAccepted, At: at(5)},
		{Op: scalesettest.OpGetMessage, Status: http.StatusServiceUnavailable, At: at(11)}, // refused: not listening
		{Op: scalesettest.OpCreateSession, Status: http.StatusOK, At: at(12)},
		{Op: scalesettest.OpGetMessage, Status: http.StatusOK, At: at(14)},
		// Nothing after the restart at 20 until the next one at 100.
		{Op: scalesettest.OpGetMessage, Status: http.StatusAccepted, At: at(170)},
		{Op: scalesettest.OpGetMessage, Status: http.StatusAccepted, At: at(130)},
	}
	got := relistenTimes(kills, pollTimes(calls), at(230))
	want := []relisten{
		{after: 4 * time.Second, window: 10 * time.Second},
		{after: notListening, window: 80 * time.Second},
		{after: 30 * time.Second, window: 100 * time.Second},
		{after: notListening, window: 30 * time.Second},
	}
	if len(got) != len(want) {
		t.Fatalf("%d relisten times, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("restart #%d: %+v, want %+v", i+1, got[i], want[i])
		}
	}
	lates := []bool{false, true, false, false}
	for i, rl := range got {
		if rl.late() != lates[i] {
			t.Errorf("restart #%d (%+v): late %v, want %v", i+1, rl, rl.late(), lates[i])
		}
	}
}

func TestCheckNamesAScaleSetRunsViolations(t *testing.T) {
	o := observed()
	o.scaleSet = &scaleSetObservation{found: true}
	r := &report{settings: testSettings(), obs: o, relisten: []relisten{{after: 8 * time.Second, window: time.Minute}, {after: notListening, window: 20 * time.Second}}}
	r.check()
	if len(r.violations) != 0 {
		t.Fatalf("violations in a clean scale-set run: %v", r.violations)
	}
	o.scaleSet.runners = []scalesettest.RunnerInfo{{Name: "runfleet-left"}}
	r = &report{settings: testSettings(), obs: o, relisten: []relisten{{after: 75 * time.Second, window: 2 * time.Minute}, {after: notListening, window: 90 * time.Second}}}
	r.check()
	for i, want := range []string{"1 runner(s) still registered in the scale set", "#1: the listener polled again only 1m15s", "#2: the listener did not poll again in the 1m30s"} {
		if i >= len(r.violations) || !strings.Contains(r.violations[i], want) {
			t.Fatalf("violations %q; want #%d to contain %q", r.violations, i+1, want)
		}
	}
	var out strings.Builder
	r.print(&out)
	if !strings.Contains(out.String(), "listener polling again after each restart") {
		t.Errorf("the report has no relisten line:\n%s", out.String())
	}
}

// A job canceled before any runner took it is not owed one; a machine
// made for it well after the cancel is a violation (issue #36), one made
// before or just after is not.
func TestCheckNamesAMachineMadeForAFinishedJob(t *testing.T) {
	at := time.Date(2026, 12, 7, 4, 0, 0, 0, time.UTC)
	o := observed()
	o.scaleSet = &scaleSetObservation{found: true}
	o.jobs = append(o.jobs, job{id: 3, requestID: 77, state: jobDone, canceledAt: at})
	first := runner.InstanceName(chaosPool, runner.ScaleSetJobID(77), 1)
	o.machines = []machine{{seenAt: at.Add(-time.Second)}, {seenAt: at.Add(time.Second)}}
	o.machines[0].Instance.Name, o.machines[1].Instance.Name = first, first+"-r2"
	r := &report{settings: testSettings(), obs: o}
	r.check()
	if len(r.violations) != 0 {
		t.Fatalf("violations for a canceled job and its machines made before the grace ended: %v", r.violations)
	}
	late := machine{seenAt: at.Add(finishedGrace + time.Second)}
	late.Instance.Name = first + "-r3"
	o.machines = append(o.machines, late)
	r = &report{settings: testSettings(), obs: o}
	r.check()
	if len(r.violations) != 1 || !strings.Contains(r.violations[0], "1 machine(s) made for a job GitHub had finished") || !strings.Contains(r.violations[0], first+"-r3") {
		t.Fatalf("violations %q; want the machine made for the canceled job", r.violations)
	}
}

func TestReassignmentsArePlannedWithoutChangingTheWebhookPlan(t *testing.T) {
	s := testSettings()
	s.intake = intakeWebhook
	webhook := newPlan(s)
	s.intake, s.actionsFaults = intakeScaleSet, true
	a, b := newPlan(s), newPlan(s)
	reassigned := 0
	for i := range a.jobs {
		w, j := *webhook.jobs[i], *a.jobs[i]
		if j.reassignLeft != b.jobs[i].reassignLeft {
			t.Fatalf("job %d: re-assignments differ between two plans of one seed", i)
		}
		if j.reassignLeft < 0 || j.reassignLeft > scalesettest.MaxReassignments {
			t.Errorf("job %d: %d re-assignments, want 0 to %d", i, j.reassignLeft, scalesettest.MaxReassignments)
		}
		if j.reassignLeft > 0 {
			reassigned++
		}
		if j.cancelAfter != b.jobs[i].cancelAfter {
			t.Fatalf("job %d: cancellations differ between two plans of one seed", i)
		}
		j.reassignLeft, j.cancelAfter = 0, 0
		if w != j {
			t.Fatalf("job %d differs from the webhook plan beyond its re-assignments and cancellation: %+v vs %+v", i, w, j)
		}
		if w.reassignLeft != 0 {
			t.Fatalf("a webhook job has re-assignments")
		}
	}
	if share := float64(reassigned) / float64(len(a.jobs)); share < reassignShare/3 || share > reassignShare*3 {
		t.Errorf("%d of %d jobs re-assigned; want about %.0f%%", reassigned, len(a.jobs), 100*reassignShare)
	}
}

func TestFaultsAreDrawnAtModerateRates(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const draws = 20_000
	armed := map[string]int{}
	for range draws {
		for _, f := range drawFaults(rng) {
			armed[f.name]++
		}
	}
	for _, f := range actionsFaults {
		if f.chance <= 0 || f.chance > 0.05 {
			t.Errorf("%s: chance %v per %s is not moderate", f.name, f.chance, faultEvery)
		}
		if got := float64(armed[f.name]) / draws; got < f.chance/2 || got > f.chance*2 {
			t.Errorf("%s armed at %.3f per draw, want about %v", f.name, got, f.chance)
		}
	}
}

func TestScaleSetPoolConfigAndFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runfleet.yaml")
	s := testSettings()
	s.intake = intakeScaleSet
	if err := writeServeConfig(path, s, serveConfig{}); err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(config), "    scale_set: {name: "+chaosScaleSet+"}\n    max_runners: 5\n") {
		t.Errorf("the pool has no scale_set:\n%s", config)
	}
	if scaleSetYAML(intakeWebhook) != "" {
		t.Error("a webhook pool has a scale_set")
	}
	for _, args := range [][]string{{"-intake", "queue"}, {"-intake", "scaleset", "-replicas", "2"}} {
		if code := run(args, io.Discard, io.Discard); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// Faults armed while nobody calls (a listener waiting out its lease) do
// not pile up: at most one per endpoint is waiting for its call.
func TestFaultsDoNotPileUpWhileNobodyCalls(t *testing.T) {
	gh := startGitHub(1)
	defer gh.close()
	a := startActions(gh, scalesettest.Options{})
	rng := rand.New(rand.NewPCG(3, 4))
	armed := map[string]int{}
	for range 2_000 {
		armDrawn(a.Server, rng, armed)
	}
	for _, f := range actionsFaults {
		if f.op == "" {
			continue
		}
		if n := a.Armed(f.op); n != 1 {
			t.Errorf("%s: %d faults waiting, want 1", f.op, n)
		}
	}
	if total(armed) == 0 || total(armed) > 2_000 {
		t.Errorf("armed %v", armed)
	}
	if !strings.HasSuffix(a.apiURL(), "/api/v3/") {
		t.Errorf("apiURL %s is not a GHES root", a.apiURL())
	}
}
