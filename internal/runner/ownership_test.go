package runner_test

import (
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
)

func TestRegisteredBy(t *testing.T) {
	ours := runner.ControllerLabel("prod")
	for _, tc := range []struct {
		name       string
		controller string
		runner     string
		labels     []string
		want       bool
	}{
		{"ours", "prod", "runfleet-p-1-1", []string{"self-hosted", ours}, true},
		{"ours, GitHub's case", "prod", "RunFleet-p-1-1", []string{"RUNFLEET-CONTROLLER-PROD"}, true},
		{"another controller's", "prod", "runfleet-p-1-1", []string{runner.ControllerLabel("staging")}, false},
		{"no controller label", "prod", "runfleet-p-1-1", []string{"self-hosted"}, false},
		{"not runfleet's name", "prod", "build-box-1", []string{ours}, false},
		{"controller without id: the name decides", "", "runfleet-p-1-1", nil, true},
		{"controller without id, not runfleet's name", "", "build-box-1", nil, false},
		{"short name", "", "run", nil, false},
	} {
		if got := runner.RegisteredBy(tc.controller, tc.runner, tc.labels); got != tc.want {
			t.Errorf("%s: RegisteredBy = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A new runner's labels say which controller registers it: the one
// ownership rule then decides whether a runner holding its name is ours.
func TestControllerIDOf(t *testing.T) {
	for _, tc := range []struct {
		labels []string
		want   string
	}{
		{nil, ""},
		{[]string{"self-hosted"}, ""},
		{[]string{"self-hosted", runner.ControllerLabel("Prod-1")}, "Prod-1"},
		{[]string{"RUNFLEET-CONTROLLER-prod", "linux"}, "prod"},
		{[]string{"runfleet-controller-"}, ""},
	} {
		if got := runner.ControllerIDOf(tc.labels); got != tc.want {
			t.Errorf("ControllerIDOf(%q) = %q, want %q", tc.labels, got, tc.want)
		}
	}
	labels := []string{"self-hosted", runner.ControllerLabel("Prod-1")}
	if !runner.RegisteredBy(runner.ControllerIDOf(labels), "runfleet-x", []string{"runfleet-controller-prod-1"}) {
		t.Error("a runner with the new runner's controller label (any case) is not ours")
	}
}
