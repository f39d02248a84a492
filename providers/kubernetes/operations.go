package kubernetes

import (
	"context"
	"errors"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/runfleet/runfleet/providers"
)

// DeleteInstance deletes the runner's pod (at once: runfleet deletes a
// runner only once GitHub has said it is not running a job) and its
// bootstrap Secret. A pod already gone is success; its Secret, if left by
// a create that failed half-way, is deleted all the same.
func (p *Provider) DeleteInstance(ctx context.Context, instance string) error {
	pod, err := p.find(ctx, instance)
	switch {
	case errors.Is(err, providers.ErrNotFound):
		if !isUID(instance) {
			p.deleteSecret(ctx, secretName(objectName(instance)))
		}
		return nil
	case err != nil:
		return callError(opDelete, instance, "find pod", err)
	}
	if err := p.remove(ctx, pod, "deleted by runfleet"); err != nil {
		return callError(opDelete, instance, "delete pod", err)
	}
	return nil
}

// GetInstance returns the runner's pod, or ErrNotFound when it is gone —
// including a pod that failed, was evicted or finished, which it removes.
func (p *Provider) GetInstance(ctx context.Context, instance string) (providers.Instance, error) {
	pod, err := p.find(ctx, instance)
	switch {
	case errors.Is(err, providers.ErrNotFound):
		return providers.Instance{}, notFound(opGet, instance)
	case err != nil:
		return providers.Instance{}, callError(opGet, instance, "get pod", err)
	}
	st := classify(pod)
	if st.Gone {
		p.reap(ctx, pod, st)
		return providers.Instance{}, notFound(opGet, instance)
	}
	return toInstance(pod, st), nil
}

// ListInstances returns the pool's live runner pods. Pods that can no
// longer serve are removed and left out, and bootstrap Secrets whose pod
// never came (a create that died between the two) are deleted.
func (p *Provider) ListInstances(ctx context.Context, poolID string) ([]providers.Instance, error) {
	if err := providers.CheckPool(opList, p.own.PoolID, poolID); err != nil {
		return nil, err
	}
	pods := &corev1.PodList{}
	if err := p.api.list(ctx, "pods", metav1.ListOptions{LabelSelector: p.own.selector(true)}, pods); err != nil {
		return nil, callError(opList, poolID, "list pods", err)
	}
	out := make([]providers.Instance, 0, len(pods.Items))
	seen := make(map[string]bool, len(pods.Items))
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !p.own.owns(pod.Labels) {
			continue
		}
		seen[secretName(pod.Name)] = true
		st := classify(pod)
		if st.Gone {
			p.reap(ctx, pod, st)
			continue
		}
		out = append(out, toInstance(pod, st))
	}
	p.sweepSecrets(ctx, seen)
	return out, nil
}

// RemoveAllInstances deletes every pod and bootstrap Secret of this
// controller in the namespace, whatever their pool.
func (p *Provider) RemoveAllInstances(ctx context.Context) error {
	sel := metav1.ListOptions{LabelSelector: p.own.selector(false)}
	pods := &corev1.PodList{}
	if err := p.api.list(ctx, "pods", sel, pods); err != nil {
		return callError(opRemoveAll, p.own.ControllerID, "list pods", err)
	}
	for i := range pods.Items {
		if err := p.deletePod(ctx, &pods.Items[i]); err != nil {
			return callError(opRemoveAll, pods.Items[i].Name, "delete pod", err)
		}
	}
	if err := p.api.deleteCollection(ctx, "secrets", metav1.DeleteOptions{}, sel); err != nil {
		return callError(opRemoveAll, p.own.ControllerID, "delete Secrets", err)
	}
	return nil
}

// StartInstance and StopInstance fail: a pod has no stopped state.
func (p *Provider) StartInstance(_ context.Context, instance string) error {
	return &providers.Error{Op: opStart, Instance: instance, Fault: ErrCannotStop.Error(), Err: ErrCannotStop}
}

// StopInstance: see StartInstance.
func (p *Provider) StopInstance(_ context.Context, instance string) error {
	return &providers.Error{Op: opStop, Instance: instance, Fault: ErrCannotStop.Error(), Err: ErrCannotStop}
}

// find returns the pool's pod with uid or instance name, or an error
// errors.Is(err, providers.ErrNotFound) accepts. A pod of another installation or pool with that
// name is not found: it is never touched.
func (p *Provider) find(ctx context.Context, instance string) (*corev1.Pod, error) {
	if isUID(instance) {
		list := &corev1.PodList{}
		if err := p.api.list(ctx, "pods", metav1.ListOptions{LabelSelector: p.own.selector(true)}, list); err != nil {
			return nil, err
		}
		for i := range list.Items {
			if string(list.Items[i].UID) == instance && p.own.owns(list.Items[i].Labels) {
				return &list.Items[i], nil
			}
		}
		return nil, providers.ErrNotFound
	}
	pod := &corev1.Pod{}
	err := p.api.get(ctx, "pods", objectName(instance), pod)
	if apierrors.IsNotFound(err) {
		return nil, providers.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if !p.own.owns(pod.Labels) || pod.Annotations[AnnotationInstance] != instance {
		return nil, providers.ErrNotFound
	}
	return pod, nil
}

// reap removes a pod that can no longer serve, logging why.
func (p *Provider) reap(ctx context.Context, pod *corev1.Pod, st podState) {
	if err := p.remove(ctx, pod, st.Reason); err != nil {
		// The next list tries again; the pod is reported gone meanwhile.
		p.log.WarnContext(ctx, "kubernetes: cannot remove a runner pod that can no longer serve",
			"instance", pod.Annotations[AnnotationInstance], "pod", pod.Name, "reason", st.Reason, "err", err)
	}
}

// remove deletes pod and its bootstrap Secret.
func (p *Provider) remove(ctx context.Context, pod *corev1.Pod, why string) error {
	if err := p.deletePod(ctx, pod); err != nil {
		return err
	}
	p.deleteSecret(ctx, secretName(pod.Name))
	p.log.InfoContext(ctx, "kubernetes: runner pod removed", "instance", pod.Annotations[AnnotationInstance],
		"pool", pod.Annotations[AnnotationPool], "pod", pod.Name, "uid", string(pod.UID), "reason", why)
	return nil
}

// deletePod deletes exactly this pod (its uid as precondition: a pod of
// the same name made since is another runner) with no grace period, so it
// is gone from the API at once even when its node no longer answers.
func (p *Provider) deletePod(ctx context.Context, pod *corev1.Pod) error {
	grace := int64(0)
	uid := pod.UID
	err := p.api.delete(ctx, "pods", pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &grace,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// deleteSecret deletes this pool's bootstrap Secret of that name; one that
// is gone or another's is left alone.
func (p *Provider) deleteSecret(ctx context.Context, name string) {
	s := &corev1.Secret{}
	if err := p.api.get(ctx, "secrets", name, s); err != nil || !p.own.owns(s.Labels) {
		return
	}
	uid := s.UID
	err := p.api.delete(ctx, "secrets", name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		p.log.WarnContext(ctx, "kubernetes: cannot delete a bootstrap Secret; the next list tries again", "secret", name, "err", err)
	}
}

// sweepSecrets deletes the pool's bootstrap Secrets whose pod is not among
// seen and that are older than a create takes.
func (p *Provider) sweepSecrets(ctx context.Context, seen map[string]bool) {
	list := &corev1.SecretList{}
	if err := p.api.list(ctx, "secrets", metav1.ListOptions{LabelSelector: p.own.selector(true)}, list); err != nil {
		p.log.WarnContext(ctx, "kubernetes: cannot list bootstrap Secrets", "err", err)
		return
	}
	for _, s := range list.Items {
		if seen[s.Name] || !p.own.owns(s.Labels) || p.now().Sub(s.CreationTimestamp.Time) < orphanSecretAge {
			continue
		}
		p.deleteSecret(ctx, s.Name)
	}
}

// isUID reports whether instance is a pod uid rather than a name.
func isUID(instance string) bool { return uidPattern.MatchString(instance) }

var uidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
