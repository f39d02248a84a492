package runner_test

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
)

func TestParseShapeReadsEveryKey(t *testing.T) {
	req, err := runner.ParseShape([]string{
		"self-hosted", "linux", "RunFleet/CPU=4", "runfleet/memory=16", "runfleet/family=M7G|c7g|m7g",
		"runfleet/disk=100", "runfleet/spot=false", "runfleet/image=Ubuntu-24.04",
	})
	if err != nil {
		t.Fatal(err)
	}
	if req.CPU != 4 || req.MemoryGiB != 16 || req.DiskGiB != 100 || req.Image != "ubuntu-24.04" {
		t.Errorf("request = %+v", req)
	}
	if !slices.Equal(req.Families, []string{"m7g", "c7g"}) {
		t.Errorf("families = %q, want [m7g c7g] (lower-cased, deduplicated, in order)", req.Families)
	}
	if req.Spot == nil || *req.Spot {
		t.Errorf("spot = %v, want false", req.Spot)
	}
}

func TestParseShapeWithoutShapeLabelsIsEmpty(t *testing.T) {
	req, err := runner.ParseShape([]string{"self-hosted", "linux", "runfleet-controller-x"})
	if err != nil || !req.Empty() {
		t.Fatalf("ParseShape = %+v, %v; want the empty request", req, err)
	}
}

func TestParseShapeRefusesMalformedLabels(t *testing.T) {
	for _, label := range []string{
		"runfleet/cpu", "runfleet/cpu=", "runfleet/cpu=four", "runfleet/cpu=0", "runfleet/cpu=-2",
		"runfleet/cpu=1.5", "runfleet/cpu=100000", "runfleet/memory=0", "runfleet/disk=99999",
		"runfleet/family=m7g||c7g", "runfleet/family=m7g.large", "runfleet/spot=maybe",
		"runfleet/image=../etc", "runfleet/gpu=1", "runfleet/",
	} {
		_, err := runner.ParseShape([]string{"linux", label})
		var refusal *runner.ShapeRefusal
		if !errors.As(err, &refusal) || refusal.Reason != runner.RefusedMalformedLabel {
			t.Errorf("ParseShape(%q) = %v, want a %s refusal", label, err, runner.RefusedMalformedLabel)
		}
	}
	_, err := runner.ParseShape([]string{"runfleet/cpu=2", "RUNFLEET/CPU=4"})
	var refusal *runner.ShapeRefusal
	if !errors.As(err, &refusal) || refusal.Reason != runner.RefusedMalformedLabel {
		t.Errorf("a key given twice = %v, want a malformed_label refusal", err)
	}
}

func policy() *runner.ShapePolicy {
	return &runner.ShapePolicy{
		Families:     []string{"c7g", "m7g", "r7g"},
		MaxCPU:       16,
		MaxMemoryGiB: 64,
		MaxDiskGiB:   200,
		Images:       map[string]string{"ubuntu": "ami-0123456789abcdef0"},
	}
}

func TestShapePolicyRefusesWhatItDoesNotAllow(t *testing.T) {
	cases := []struct {
		labels []string
		reason string
	}{
		{[]string{"runfleet/cpu=32"}, runner.RefusedCPUOverLimit},
		{[]string{"runfleet/memory=128"}, runner.RefusedMemoryOverLimit},
		{[]string{"runfleet/disk=500"}, runner.RefusedDiskOverLimit},
		{[]string{"runfleet/family=p5"}, runner.RefusedFamilyNotAllowed},
		{[]string{"runfleet/family=m7g|p5"}, runner.RefusedFamilyNotAllowed},
		{[]string{"runfleet/spot=true"}, runner.RefusedSpotNotAllowed},
		{[]string{"runfleet/image=windows"}, runner.RefusedUnknownImage},
		{[]string{"runfleet/cpu=x"}, runner.RefusedMalformedLabel},
	}
	pool := runner.Pool{Name: "linux", Labels: []string{"linux"}, Shapes: policy()}
	for _, c := range cases {
		m, err := pool.GrantShape(append([]string{"linux"}, c.labels...))
		var refusal *runner.ShapeRefusal
		if !errors.As(err, &refusal) || refusal.Reason != c.reason || m != nil {
			t.Errorf("GrantShape(%q) = %+v, %v; want a %s refusal", c.labels, m, err, c.reason)
		}
		if !slices.Contains(runner.RefusalReasons, c.reason) {
			t.Errorf("reason %s missing from RefusalReasons", c.reason)
		}
	}
}

func TestPoolWithoutPolicyRefusesEveryShape(t *testing.T) {
	pool := runner.Pool{Name: "linux", Labels: []string{"linux"}}
	_, err := pool.GrantShape([]string{"linux", "runfleet/spot=false"})
	var refusal *runner.ShapeRefusal
	if !errors.As(err, &refusal) || refusal.Reason != runner.RefusedShapesNotAllowed {
		t.Fatalf("GrantShape = %v, want shapes_not_allowed", err)
	}
	if m, err := pool.GrantShape([]string{"linux"}); m != nil || err != nil {
		t.Fatalf("an unshaped job: GrantShape = %+v, %v; want nil, nil", m, err)
	}
}

func TestShapePolicyGrantsWithinPolicy(t *testing.T) {
	pool := runner.Pool{Name: "linux", Labels: []string{"linux"}, Shapes: policy()}
	m, err := pool.GrantShape([]string{"linux", "runfleet/cpu=4", "runfleet/family=r7g|c7g", "runfleet/spot=false", "runfleet/image=ubuntu", "runfleet/disk=100"})
	if err != nil {
		t.Fatal(err)
	}
	want := runner.Machine{MinCPU: 4, MaxCPU: 16, MaxMemoryGiB: 64, DiskGiB: 100, Market: runner.MarketOnDemand, Image: "ami-0123456789abcdef0"}
	if !slices.Equal(m.Families, []string{"c7g", "r7g"}) {
		t.Errorf("families = %q, want the job's in the policy's (cheapest-first) order", m.Families)
	}
	m.Families = nil
	if !reflect.DeepEqual(*m, want) {
		t.Errorf("machine = %+v, want %+v", *m, want)
	}
	m, err = pool.GrantShape([]string{"linux", "runfleet/memory=8"})
	if err != nil || !slices.Equal(m.Families, policy().Families) || m.Market != "" || m.Image != "" {
		t.Errorf("memory only: %+v, %v; want every policy family, the pool's market and image", m, err)
	}
}

func TestShapeLabelsNeverDecideThePool(t *testing.T) {
	pools := runner.Pools{
		{Name: "gpu", Owner: runner.Owner{Org: "octo-org"}, Labels: []string{"linux", "gpu"}},
		{Name: "linux", Owner: runner.Owner{Org: "octo-org"}, Labels: []string{"linux"}, Shapes: policy()},
	}
	cases := []struct {
		labels []string
		want   string
	}{
		// Shape labels do not keep a job from the pool its other labels match…
		{[]string{"self-hosted", "linux", "runfleet/cpu=4"}, "gpu"},
		{[]string{"linux", "gpu", "runfleet/cpu=4"}, "gpu"},
		// …nor lead a job elsewhere: a label no pool has still matches none.
		{[]string{"linux", "arm64", "runfleet/cpu=4"}, ""},
		// A job with only shape labels names no pool.
		{[]string{"runfleet/cpu=4"}, ""},
		{[]string{"runfleet/cpu=4", "runfleet/family=m7g"}, ""},
	}
	for _, c := range cases {
		p, ok := pools.Match("octo-org/web", "octo-org", "", c.labels)
		got := ""
		if ok {
			got = p.Name
		}
		if got != c.want {
			t.Errorf("Match(%q) = %q, want %q", c.labels, got, c.want)
		}
	}
}

func TestJobRunnerLabelsCarryTheJobsShape(t *testing.T) {
	pool := runner.Pool{Name: "linux", Labels: []string{"linux"}}
	got := pool.JobRunnerLabels("ctl", []string{"self-hosted", "linux", "runfleet/cpu=4", "RunFleet/Family=m7g"})
	want := []string{"self-hosted", "linux", runner.ControllerLabel("ctl"), "runfleet/cpu=4", "RunFleet/Family=m7g"}
	if !slices.Equal(got, want) {
		t.Errorf("JobRunnerLabels = %q, want %q", got, want)
	}
}

func TestSameShape(t *testing.T) {
	cases := []struct {
		a, b []string
		want bool
	}{
		{[]string{"linux"}, []string{"linux", "x64"}, true},
		{[]string{"runfleet/cpu=4", "runfleet/memory=16"}, []string{"RUNFLEET/MEMORY=16", "linux", "runfleet/cpu=4"}, true},
		{[]string{"runfleet/cpu=4"}, []string{"runfleet/cpu=4", "runfleet/memory=16"}, false},
		{[]string{"runfleet/cpu=4"}, nil, false},
		{[]string{"runfleet/cpu=4"}, []string{"runfleet/cpu=8"}, false},
	}
	for _, c := range cases {
		if got := runner.SameShape(c.a, c.b); got != c.want {
			t.Errorf("SameShape(%q, %q) = %t, want %t", c.a, c.b, got, c.want)
		}
	}
}
