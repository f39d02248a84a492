package kubernetes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/runfleet/runfleet/providers"
)

func TestClassify(t *testing.T) {
	now := metav1.Now()
	disrupted := []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler"}}
	cases := []struct {
		name   string
		pod    corev1.Pod
		gone   bool
		status providers.MachineStatus
		reason string
	}{
		{name: "pending: being made", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, status: providers.StatusRunning},
		{name: "no phase yet", pod: corev1.Pod{}, status: providers.StatusRunning},
		{name: "running", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, status: providers.StatusRunning},
		{name: "unknown: node silent, may come back", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodUnknown}}, status: providers.StatusUnknown},
		{name: "failed", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, gone: true, reason: "pod Failed"},
		{name: "evicted", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "low on memory"}}, gone: true, reason: "pod Evicted: low on memory"},
		{name: "succeeded: runner exited", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, gone: true, reason: "runner exited"},
		{name: "terminating", pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}, gone: true, reason: "being deleted"},
		{name: "disruption target while running", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: disrupted}}, gone: true, reason: "disruption target: PreemptionByScheduler"},
		{name: "disruption condition false", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse}}}}, status: providers.StatusRunning},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := classify(&c.pod)
			if got.Gone != c.gone || (!c.gone && got.Status != c.status) || (c.gone && got.Reason != c.reason) {
				t.Errorf("classify = %+v; want gone=%v status=%q reason=%q", got, c.gone, c.status, c.reason)
			}
		})
	}
}

func TestLabelValue(t *testing.T) {
	cases := map[string]bool{ // input → kept as is
		"ctl":                                  true,
		"0b7c5a54-6a5e-8f00-9c1d-2b3c4d5e6f70": true,
		"":                                     true,
		"a-very-long-controller-id-that-is-exactly-sixty-four-characters-x": false,
		"ends-with-dash-": false,
		"has space":       false,
	}
	seen := map[string]string{}
	for in, kept := range cases {
		got := labelValue(in)
		if (got == in) != kept {
			t.Errorf("labelValue(%q) = %q; kept as is = %v, want %v", in, got, got == in, kept)
		}
		if len(got) > 63 {
			t.Errorf("labelValue(%q) = %q: longer than a label value may be", in, got)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("labelValue(%q) = labelValue(%q) = %q", in, other, got)
		}
		seen[got] = in
	}
}

func TestObjectName(t *testing.T) {
	cases := []struct{ in, want string }{
		{"runfleet-linux-42-1", "runfleet-linux-42-1"},
		{"Runfleet_Linux", "runfleet-linux-"},
	}
	for _, c := range cases {
		got := objectName(c.in)
		if c.in == c.want && got != c.want {
			t.Errorf("objectName(%q) = %q; want it unchanged", c.in, got)
		}
		if c.in != c.want && (got == c.in || len(got) > 58 || got[:len(c.want)] != c.want) {
			t.Errorf("objectName(%q) = %q; want %q and a hash", c.in, got, c.want)
		}
	}
	long := objectName("runfleet-" + string(make([]byte, 0)) + "a-pool-with-a-name-so-long-that-the-pod-name-exceeds-a-label-123-1")
	if len(long) > 58 {
		t.Errorf("objectName of a long name = %q (%d characters); want at most 58", long, len(long))
	}
	if objectName("x-1") == objectName("X-1") {
		t.Error("two instance names that differ in case share an object name")
	}
}
