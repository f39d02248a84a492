package statuspage

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
)

func TestRecorderKeepsOnlyTheNewestTransitions(t *testing.T) {
	c := testclock.At(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rec := NewRecorder(c.Now)
	total := MaxTransitions + 57
	for i := range total {
		c.Advance(time.Second)
		rec.InstanceChanged(&runner.Instance{Name: fmt.Sprintf("i-%d", i), Pool: "p", Status: runner.StatusRunning}, runner.StatusCreating)
	}
	got := rec.Transitions()
	if len(got) != MaxTransitions {
		t.Fatalf("kept %d transitions, want %d", len(got), MaxTransitions)
	}
	if got[0].Instance != fmt.Sprintf("i-%d", total-1) || got[len(got)-1].Instance != fmt.Sprintf("i-%d", total-MaxTransitions) {
		t.Errorf("kept %s … %s, want the newest first down to the %d-th newest", got[0].Instance, got[len(got)-1].Instance, MaxTransitions)
	}
	if got[0].From != runner.StatusCreating || got[0].To != runner.StatusRunning || !got[0].At.Equal(c.Now()) {
		t.Errorf("newest transition = %+v", got[0])
	}
}

func TestRecorderForgetsSamplesOlderThanTheWindow(t *testing.T) {
	c := testclock.At(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC))
	rec := NewRecorder(c.Now)
	rec.JobWaited("p", engine.StageStarted, 3*time.Second) // will fall out of the window
	c.Advance(30 * time.Minute)
	rec.JobWaited("p", engine.StageCreated, time.Second)
	c.Advance(SampleWindow - time.Minute)
	rec.JobWaited("p", engine.StageStarted, 2*time.Second)

	got := rec.Samples()
	if len(got) != 2 || got[0].Waited != time.Second || got[1].Waited != 2*time.Second {
		t.Fatalf("samples in the window = %+v, want the 1s then the 2s one", got)
	}
}

func TestRecorderSamplesAreBoundedInABurst(t *testing.T) {
	c := testclock.At(time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC))
	rec := NewRecorder(c.Now)
	for i := range MaxSamples + 10 {
		rec.JobWaited("p", engine.StageStarted, time.Duration(i))
	}
	got := rec.Samples()
	if len(got) != MaxSamples || got[0].Waited != 10 {
		t.Fatalf("kept %d samples starting at %v, want %d starting at the 11th", len(got), got[0].Waited, MaxSamples)
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		230 * time.Millisecond:                "230ms",
		4 * time.Second:                       "4s",
		-4 * time.Second:                      "4s",
		59*time.Second + 900*time.Millisecond: "59s",
		3*time.Minute + 12*time.Second:        "3m12s",
		5 * time.Minute:                       "5m",
		2*time.Hour + 5*time.Minute:           "2h5m",
		7 * 24 * time.Hour:                    "7d",
		3*24*time.Hour + 4*time.Hour:          "3d4h",
	} {
		if got := HumanDuration(d); got != want {
			t.Errorf("HumanDuration(%v) = %q, want %q", d, got, want)
		}
	}
	at := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	if got := Relative(at.Add(4*time.Second), at); got != "in 4s" {
		t.Errorf("Relative of 4s ahead = %q", got)
	}
	if got := Relative(at.Add(-7*24*time.Hour), at); got != "7d ago" {
		t.Errorf("Relative of 7 days before = %q", got)
	}
	if got := Relative(time.Time{}, at); got != "-" {
		t.Errorf("Relative of the zero time = %q", got)
	}
}

func TestTickLabelsAreExact(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0ms", 500 * time.Millisecond: "500ms", 1500 * time.Millisecond: "1.5s", 2500 * time.Millisecond: "2.5s",
		7*time.Minute + 30*time.Second: "7m30s", 90 * time.Minute: "1h30m",
	} {
		if got := tickLabel(d); got != want {
			t.Errorf("tickLabel(%v) = %q, want %q", d, got, want)
		}
	}
}

// The last reconcile pass's warm sizes are kept per pool, the newest
// winning, and a pass without any leaves them as they were.
func TestRecorderKeepsTheLastWarmSizes(t *testing.T) {
	rec := NewRecorder(nil)
	rec.ReconcilePassed(engine.ReconcileReport{Warm: []engine.WarmSize{{Pool: "a", Hot: 3}, {Pool: "b", Hot: 1}}}, 0)
	rec.ReconcilePassed(engine.ReconcileReport{Warm: []engine.WarmSize{{Pool: "a", Hot: 5}}}, 0)
	rec.ReconcilePassed(engine.ReconcileReport{}, 0)
	got := rec.Warm()
	if len(got) != 2 || got["a"].Hot != 5 || got["b"].Hot != 1 {
		t.Fatalf("Warm() = %+v", got)
	}
	rows := []poolRow{{Name: "a"}, {Name: "c"}}
	got["a"] = engine.WarmSize{Pool: "a", Hot: 5, Reason: "only hot runners meet the target", PerMinute: 0.5, ArrivedLastHour: 41, HistoryDays: 23.6}
	setWarm(rows, got)
	if want := "5 warm (only hot runners meet the target) · 30/h foretold · 41 came in the last hour · 23 d of history"; rows[0].Warm != want || rows[0].WarmRunners != 5 {
		t.Errorf("row a: %q (%d), want %q", rows[0].Warm, rows[0].WarmRunners, want)
	}
	got["a"] = engine.WarmSize{Pool: "a", Hot: 1, Reason: "only hot runners meet the target", HistoryDays: 0.3}
	setWarm(rows, got)
	if want := "7 h of history"; !strings.HasSuffix(rows[0].Warm, want) {
		t.Errorf("a pool's first day: %q, want it to end %q", rows[0].Warm, want)
	}
	if rows[1].Warm != "—" {
		t.Errorf("a pool without a target: %q", rows[1].Warm)
	}
}
