package kubetest

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
)

// Kubelet plays what a kubelet, the scheduler and the node lifecycle
// controller would do to the pods of one namespace — none of them runs
// here — through the same API calls they make: pods/binding and
// pods/status.
type Kubelet struct {
	Client    k8s.Interface
	Namespace string
}

// AddNode registers a node (as a kubelet does when it starts).
func (k Kubelet) AddNode(ctx context.Context, name string) error {
	_, err := k.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
	}, metav1.CreateOptions{})
	return err
}

// Bind schedules the pod onto node (what the scheduler does).
func (k Kubelet) Bind(ctx context.Context, pod, node string) error {
	return k.Client.CoreV1().Pods(k.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
}

// SetPhase sets the pod's phase (with a reason and message when given),
// as the kubelet reports it.
func (k Kubelet) SetPhase(ctx context.Context, pod string, phase corev1.PodPhase, reason, message string) error {
	p, err := k.Client.CoreV1().Pods(k.Namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return err
	}
	p.Status.Phase = phase
	p.Status.Reason = reason
	p.Status.Message = message
	if phase == corev1.PodRunning {
		now := metav1.Now()
		p.Status.StartTime = &now
		p.Status.PodIP = "10.1.0.1"
		p.Status.Conditions = setCondition(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	}
	_, err = k.Client.CoreV1().Pods(k.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

// Run binds the pod to node and sets it Running: its runner started.
func (k Kubelet) Run(ctx context.Context, pod, node string) error {
	if err := k.Bind(ctx, pod, node); err != nil {
		return fmt.Errorf("bind %s: %w", pod, err)
	}
	return k.SetPhase(ctx, pod, corev1.PodRunning, "", "")
}

// Fail sets the pod Failed (its container exited non-zero, say).
func (k Kubelet) Fail(ctx context.Context, pod string) error {
	return k.SetPhase(ctx, pod, corev1.PodFailed, "Error", "the runner container exited with code 1")
}

// Succeed sets the pod Succeeded (its runner served its job and exited).
func (k Kubelet) Succeed(ctx context.Context, pod string) error {
	return k.SetPhase(ctx, pod, corev1.PodSucceeded, "", "")
}

// Evict does what the kubelet does to a pod under node pressure: marks it
// a disruption target and Failed with reason Evicted.
func (k Kubelet) Evict(ctx context.Context, pod string) error {
	p, err := k.Client.CoreV1().Pods(k.Namespace).Get(ctx, pod, metav1.GetOptions{})
	if err != nil {
		return err
	}
	p.Status.Phase = corev1.PodFailed
	p.Status.Reason = "Evicted"
	p.Status.Message = "The node was low on resource: memory."
	p.Status.Conditions = setCondition(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "TerminationByKubelet",
	})
	_, err = k.Client.CoreV1().Pods(k.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

// LoseNode does what the node lifecycle controller does when a node stops
// answering: the node's pods get an Unknown Ready condition, then are
// marked disruption targets and deleted with their grace period (with no
// kubelet to confirm, they stay Terminating), and the node goes.
func (k Kubelet) LoseNode(ctx context.Context, node string) error {
	pods, err := k.Client.CoreV1().Pods(k.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		p.Status.Conditions = setCondition(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionUnknown, Reason: "NodeLost"})
		p.Status.Conditions = setCondition(p.Status.Conditions, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager",
		})
		if _, err := k.Client.CoreV1().Pods(k.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			return err
		}
		if err := k.Client.CoreV1().Pods(k.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return err
		}
	}
	return k.Client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
}

func setCondition(list []corev1.PodCondition, c corev1.PodCondition) []corev1.PodCondition {
	c.LastTransitionTime = metav1.Now()
	for i := range list {
		if list[i].Type == c.Type {
			list[i] = c
			return list
		}
	}
	return append(list, c)
}
