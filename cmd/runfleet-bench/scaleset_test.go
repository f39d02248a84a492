package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestTallyRunnersCountsOneRunnerPerJob(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		registered, want      []string
		missing, extra, stray int
	}{
		{"one each", []string{"a", "b"}, []string{"a", "b"}, 0, 0, 0},
		{"none yet", nil, []string{"a", "b"}, 2, 0, 0},
		{"a job's runner made twice", []string{"a", "a", "b"}, []string{"a", "b"}, 0, 1, 0},
		{"three times counts two extra", []string{"a", "a", "a"}, []string{"a"}, 0, 2, 0},
		{"a runner for no job", []string{"a", "x", "x"}, []string{"a"}, 0, 0, 2},
		{"all at once", []string{"b", "b", "y"}, []string{"a", "b"}, 1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, e, s := tallyRunners(tc.registered, tc.want)
			if m != tc.missing || e != tc.extra || s != tc.stray {
				t.Errorf("tallyRunners = missing %d, extra %d, stray %d; want %d, %d, %d", m, e, s, tc.missing, tc.extra, tc.stray)
			}
		})
	}
}

func TestScaleSetCheckFailsTheBurst(t *testing.T) {
	for _, tc := range []struct {
		name string
		ck   scaleSetCheck
		want []string // in the verdict; none: the check passes
	}{
		{"clean", scaleSetCheck{}, nil},
		{"a message never acknowledged", scaleSetCheck{unacknowledged: 1}, []string{"1 scale-set messages never acknowledged"}},
		{"a lost job", scaleSetCheck{jobsWithoutRunner: 2}, []string{"2 jobs without a JIT runner"}},
		{"a duplicate", scaleSetCheck{extraRunners: 1, strayRunners: 3}, []string{"1 extra JIT runners", "3 JIT runners for no job"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ck := burstCheck{scaleSet: &tc.ck}
			if ok := ck.ok(); ok != (len(tc.want) == 0) {
				t.Fatalf("ok() = %v with %+v", ok, tc.ck)
			}
			for _, w := range tc.want {
				if v := verdict(ck); !strings.Contains(v, w) {
					t.Errorf("verdict %q lacks %q", v, w)
				}
			}
		})
	}
	if !(burstCheck{}).ok() {
		t.Error("a webhook burst (no scale-set check) with nothing wrong fails")
	}
}

func TestSinceStartedPairsEachJobWithItsStart(t *testing.T) {
	t0 := time.Now()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, tc := range []struct {
		name    string
		jobs    []int64
		started []time.Time
		end     map[int64]time.Time
		want    []time.Duration
	}{
		{"in order", []int64{1, 2}, []time.Time{t0, t0.Add(ms(1))}, map[int64]time.Time{1: t0.Add(ms(5)), 2: t0.Add(ms(3))}, []time.Duration{ms(5), ms(2)}},
		{"a job never created is left out", []int64{1, 2}, []time.Time{t0, t0}, map[int64]time.Time{2: t0.Add(ms(7))}, []time.Duration{ms(7)}},
		{"a start never stamped is left out", []int64{1, 2}, []time.Time{{}, t0}, map[int64]time.Time{1: t0, 2: t0.Add(ms(1))}, []time.Duration{ms(1)}},
		{"fewer starts than jobs", []int64{1, 2}, []time.Time{t0}, map[int64]time.Time{1: t0.Add(ms(4)), 2: t0}, []time.Duration{ms(4)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The server's stamps carry no monotonic reading; the starts do.
			end := map[int64]time.Time{}
			for k, v := range tc.end {
				end[k] = v.Round(0)
			}
			if got := sinceStarted(tc.jobs, tc.started, end); !slices.Equal(got, tc.want) {
				t.Errorf("sinceStarted = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestComparableBurstIsTheFirstOnAnEmptyPool(t *testing.T) {
	fresh := &burstResult{label: "burst 1", jobs: 1000}
	grown := &burstResult{label: "burst 2", jobs: 1000, poolBefore: 1000}
	big := &burstResult{label: "big", jobs: 3000}
	for _, tc := range []struct {
		name   string
		bursts []*burstResult
		jobs   int
		want   *burstResult
	}{
		{"the first of the growing bursts", []*burstResult{fresh, grown, big}, 1000, fresh},
		{"not one on a grown pool", []*burstResult{grown, big}, 1000, nil},
		{"not one of another size", []*burstResult{big}, 1000, nil},
		{"none run", nil, 1000, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := comparableBurst(tc.bursts, tc.jobs); got != tc.want {
				t.Errorf("comparableBurst = %+v, want %+v", got, tc.want)
			}
		})
	}
}
