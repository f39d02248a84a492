package kubernetes

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/runfleet/runfleet/providers"
)

// podState is what a pod means to runfleet.
type podState struct {
	// Gone: the pod can never serve a job (failed, evicted, finished or
	// being deleted). The provider reports it as not there and removes it,
	// so the job ledger replaces it at once instead of it holding a slot.
	Gone   bool
	Reason string
	Status providers.MachineStatus
}

// classify decides what a pod is, from its phase, deletion mark and
// conditions alone (a pure function: tested as a table).
func classify(pod *corev1.Pod) podState {
	switch {
	case pod.DeletionTimestamp != nil:
		// Being deleted (by someone, an eviction, or the node lifecycle
		// after a node was lost): its runner is going away.
		return podState{Gone: true, Reason: "being deleted" + reasonSuffix(pod)}
	case pod.Status.Phase == corev1.PodFailed:
		reason := pod.Status.Reason
		if reason == "" {
			reason = "Failed"
		}
		return podState{Gone: true, Reason: "pod " + reason + messageSuffix(pod.Status.Message)}
	case pod.Status.Phase == corev1.PodSucceeded:
		return podState{Gone: true, Reason: "runner exited"}
	}
	for _, c := range pod.Status.Conditions {
		// The kubelet or the node lifecycle marked the pod for disruption
		// (eviction, preemption, a node that stopped answering): the
		// pod is about to go, and a job must not wait for it.
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return podState{Gone: true, Reason: "disruption target: " + c.Reason}
		}
	}
	// Pending (being scheduled, pulling its image) and Running pods are
	// machines being made or up; the engine's bootstrap timeout handles a
	// pod that never starts its runner. Unknown (its node stopped
	// reporting) is still held: it may come back.
	switch pod.Status.Phase {
	case corev1.PodUnknown:
		return podState{Status: providers.StatusUnknown}
	default:
		return podState{Status: providers.StatusRunning}
	}
}

func reasonSuffix(pod *corev1.Pod) string {
	if pod.Status.Reason != "" {
		return " (" + pod.Status.Reason + ")"
	}
	return ""
}

func messageSuffix(m string) string {
	if m == "" {
		return ""
	}
	return ": " + m
}
