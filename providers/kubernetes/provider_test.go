package kubernetes_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/kubernetes"
)

func TestCreateMakesAPodThatAloneMountsItsSecret(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := e.provider(t, "ctl", "linux", nil)
	a, err := p.CreateInstance(ctx, createReq("ctl", "linux", "runfleet-linux-1-1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CreateInstance(ctx, createReq("ctl", "linux", "runfleet-linux-2-1")); err != nil {
		t.Fatal(err)
	}
	if a.Name != "runfleet-linux-1-1" || a.ProviderID == "" || a.Status != providers.StatusRunning {
		t.Fatalf("created %+v", a)
	}
	pods, secrets := e.pods(t), e.secrets(t)
	if len(pods) != 2 || len(secrets) != 2 {
		t.Fatalf("%d pods, %d secrets; want 2 of each", len(pods), len(secrets))
	}
	for _, pod := range pods {
		var mounted []string
		for _, v := range pod.Spec.Volumes {
			if v.Secret != nil {
				mounted = append(mounted, v.Secret.SecretName)
			}
		}
		if !slices.Equal(mounted, []string{pod.Name + "-bootstrap"}) {
			t.Errorf("pod %s mounts secrets %v; want only its own", pod.Name, mounted)
		}
	}
	for _, s := range secrets {
		if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Kind != "Pod" || s.OwnerReferences[0].Name+"-bootstrap" != s.Name {
			t.Errorf("secret %s owners %+v; want its pod", s.Name, s.OwnerReferences)
		}
		if string(s.Data["instance-token"]) != "token-"+s.OwnerReferences[0].Name {
			t.Errorf("secret %s holds token %q", s.Name, s.Data["instance-token"])
		}
	}

	// A create retried (after a timeout) finds its own pod.
	again, err := p.CreateInstance(ctx, createReq("ctl", "linux", "runfleet-linux-1-1"))
	if err != nil || again.ProviderID != a.ProviderID {
		t.Fatalf("retried create = %+v, %v; want the same pod", again, err)
	}

	got, err := p.GetInstance(ctx, a.ProviderID)
	if err != nil || got.Name != a.Name {
		t.Fatalf("get by uid = %+v, %v", got, err)
	}
	if got, err = p.GetInstance(ctx, a.Name); err != nil || got.ProviderID != a.ProviderID {
		t.Fatalf("get by name = %+v, %v", got, err)
	}
	list, err := p.ListInstances(ctx, runner.PoolID("ctl", "linux"))
	if err != nil || !slices.Equal(names(list), []string{"runfleet-linux-1-1", "runfleet-linux-2-1"}) {
		t.Fatalf("list = %v, %v", names(list), err)
	}

	// Delete by uid, then by name; each twice (a gone pod is success).
	for _, id := range []string{a.ProviderID, a.ProviderID, "runfleet-linux-2-1", "runfleet-linux-2-1"} {
		if err := p.DeleteInstance(ctx, id); err != nil {
			t.Fatalf("delete %s: %v", id, err)
		}
	}
	if pods, secrets := e.pods(t), e.secrets(t); len(pods) != 0 || len(secrets) != 0 {
		t.Fatalf("left %d pods, %d secrets after deleting both", len(pods), len(secrets))
	}
	if _, err := p.GetInstance(ctx, a.Name); !errors.Is(err, providers.ErrNotFound) {
		t.Fatalf("get of a deleted pod = %v; want ErrNotFound", err)
	}
}

func TestFailedEvictedFinishedAndLostPodsAreGoneAndRemoved(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := e.provider(t, "ctl", "linux", nil)
	poolID := runner.PoolID("ctl", "linux")
	if err := e.kubelet.AddNode(ctx, e.ns+"-node-a"); err != nil {
		t.Fatal(err)
	}
	if err := e.kubelet.AddNode(ctx, e.ns+"-node-b"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"failed", "evicted", "finished", "lost", "healthy"} {
		if _, err := p.CreateInstance(ctx, createReq("ctl", "linux", "runfleet-linux-"+n)); err != nil {
			t.Fatal(err)
		}
		node := e.ns + "-node-a"
		if n == "lost" {
			node = e.ns + "-node-b"
		}
		if err := e.kubelet.Run(ctx, "runfleet-linux-"+n, node); err != nil {
			t.Fatal(err)
		}
	}
	steps := []error{
		e.kubelet.Fail(ctx, "runfleet-linux-failed"),
		e.kubelet.Evict(ctx, "runfleet-linux-evicted"),
		e.kubelet.Succeed(ctx, "runfleet-linux-finished"),
		e.kubelet.LoseNode(ctx, e.ns+"-node-b"),
	}
	if err := errors.Join(steps...); err != nil {
		t.Fatal(err)
	}
	// Get reports a failed pod gone at once (and removes it).
	if _, err := p.GetInstance(ctx, "runfleet-linux-failed"); !errors.Is(err, providers.ErrNotFound) {
		t.Fatalf("get of a failed pod = %v; want ErrNotFound", err)
	}
	list, err := p.ListInstances(ctx, poolID)
	if err != nil || !slices.Equal(names(list), []string{"runfleet-linux-healthy"}) {
		t.Fatalf("list = %v, %v; want only the healthy pod", names(list), err)
	}
	pods, secrets := e.pods(t), e.secrets(t)
	if len(pods) != 1 || pods[0].Name != "runfleet-linux-healthy" || len(secrets) != 1 {
		t.Fatalf("left %d pods, %d secrets; want the healthy pod and its Secret only", len(pods), len(secrets))
	}
}

func TestTwoInstallationsInOneNamespaceNeverTouchEachOthersPods(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// Both installations call their pool "linux"; a third pool of the
	// first installation shares the namespace too.
	a := e.provider(t, "ctl-a", "linux", nil)
	b := e.provider(t, "ctl-b", "linux", nil)
	a2 := e.provider(t, "ctl-a", "arm", nil)
	mustCreate := func(p *kubernetes.Provider, ctl, pool, name string) providers.Instance {
		in, err := p.CreateInstance(ctx, createReq(ctl, pool, name))
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	ia := mustCreate(a, "ctl-a", "linux", "runfleet-linux-a-1")
	ib := mustCreate(b, "ctl-b", "linux", "runfleet-linux-b-1")
	mustCreate(a2, "ctl-a", "arm", "runfleet-arm-a-1")

	// Same instance name from the other installation: refused, not adopted.
	if _, err := b.CreateInstance(ctx, createReq("ctl-b", "linux", "runfleet-linux-a-1")); err == nil {
		t.Error("installation b's create adopted installation a's pod of the same name")
	}
	la, _ := a.ListInstances(ctx, runner.PoolID("ctl-a", "linux"))
	lb, _ := b.ListInstances(ctx, runner.PoolID("ctl-b", "linux"))
	if !slices.Equal(names(la), []string{"runfleet-linux-a-1"}) || !slices.Equal(names(lb), []string{"runfleet-linux-b-1"}) {
		t.Fatalf("a lists %v, b lists %v", names(la), names(lb))
	}
	// b cannot see, get or delete a's pod, by name or uid.
	for _, id := range []string{ia.Name, ia.ProviderID} {
		if _, err := b.GetInstance(ctx, id); !errors.Is(err, providers.ErrNotFound) {
			t.Errorf("b gets a's pod %s: %v", id, err)
		}
		if err := b.DeleteInstance(ctx, id); err != nil {
			t.Errorf("b deletes a's pod %s: %v", id, err)
		}
	}
	// b's RemoveAll removes b's pods only.
	if err := b.RemoveAllInstances(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetInstance(ctx, ib.ProviderID); !errors.Is(err, providers.ErrNotFound) {
		t.Errorf("b's own pod survived its RemoveAll: %v", err)
	}
	var left []string
	for _, pod := range e.pods(t) {
		left = append(left, pod.Name)
	}
	slices.Sort(left)
	if !slices.Equal(left, []string{"runfleet-arm-a-1", "runfleet-linux-a-1"}) {
		t.Fatalf("pods left %v; want a's two", left)
	}
	if len(e.secrets(t)) != 2 {
		t.Fatalf("secrets left %d; want a's two", len(e.secrets(t)))
	}
	// A list for another pool is refused.
	if _, err := a.ListInstances(ctx, runner.PoolID("ctl-b", "linux")); !errors.Is(err, providers.ErrWrongPool) {
		t.Errorf("a lists b's pool: %v; want ErrWrongPool", err)
	}
}

func TestNamedPodTemplateAndShapes(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	pt := &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "runner"},
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"pool": "ci"},
			Tolerations:  []corev1.Toleration{{Key: "ci", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers:   []corev1.Container{{Name: "runner", Image: "runner:from-template"}},
			Volumes:      []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		}},
	}
	if _, err := e.srv.Client(t).CoreV1().PodTemplates(e.ns).Create(ctx, pt, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := e.provider(t, "ctl", "linux", map[string]any{"pod_template": "runner"})
	req := createReq("ctl", "linux", "runfleet-linux-9-1")
	req.Shape = &providers.Shape{MinCPU: 4, MinMemoryGiB: 16}
	if _, err := p.CreateInstance(ctx, req); err != nil {
		t.Fatal(err)
	}
	pod := e.pods(t)[0]
	c := pod.Spec.Containers[0]
	cpu, mem := c.Resources.Requests[corev1.ResourceCPU], c.Resources.Requests[corev1.ResourceMemory]
	if c.Image != "runner:from-template" || cpu.String() != "4" || mem.String() != "16Gi" || pod.Spec.NodeSelector["pool"] != "ci" || !hasVolume(pod, "work") || !hasVolume(pod, "runfleet-bootstrap") {
		t.Fatalf("pod %s: image %s, requests %v, selector %v, %d volumes", pod.Name, c.Image, c.Resources.Requests, pod.Spec.NodeSelector, len(pod.Spec.Volumes))
	}
	// A missing template is a failed create, with nothing left behind.
	bad := e.provider(t, "ctl", "linux", map[string]any{"pod_template": "absent"})
	if _, err := bad.CreateInstance(ctx, createReq("ctl", "linux", "runfleet-linux-10-1")); err == nil {
		t.Fatal("a create from a missing PodTemplate succeeded")
	}
	if len(e.secrets(t)) != 1 {
		t.Fatalf("%d secrets; the failed create left one", len(e.secrets(t)))
	}
}

func TestOrphanedSecretIsSweptOnceOld(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	p := e.provider(t, "ctl", "linux", nil)
	poolID := runner.PoolID("ctl", "linux")
	if _, err := p.CreateInstance(ctx, createReq("ctl", "linux", "runfleet-linux-3-1")); err != nil {
		t.Fatal(err)
	}
	// The pod vanished behind runfleet's back (deleted by hand; nothing
	// garbage-collects its Secret here).
	grace := int64(0)
	if err := e.srv.Client(t).CoreV1().Pods(e.ns).Delete(ctx, "runfleet-linux-3-1", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ListInstances(ctx, poolID); err != nil || len(e.secrets(t)) != 1 {
		t.Fatalf("a young Secret was swept (a create may be making its pod): %v", err)
	}
	e.clock.Advance(3 * 60e9)
	if _, err := p.ListInstances(ctx, poolID); err != nil || len(e.secrets(t)) != 0 {
		t.Fatalf("list: %v; %d secrets left; want the orphan swept", err, len(e.secrets(t)))
	}
}

func TestKubeconfigAndInClusterConfig(t *testing.T) {
	e := newEnv(t)
	path, err := e.srv.Kubeconfig(t.TempDir(), e.ns)
	if err != nil {
		t.Fatal(err)
	}
	// No namespace setting: the kubeconfig context's namespace.
	s, err := kubernetes.ParseSettings(map[string]any{"image": "runner:1", "kubeconfig": path})
	if err != nil {
		t.Fatal(err)
	}
	p, err := kubernetes.New(s, kubernetes.Options{Ownership: kubernetes.Ownership{ControllerID: "ctl", PoolID: runner.PoolID("ctl", "linux")}, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if p.Namespace() != e.ns {
		t.Fatalf("namespace %q; want the context's %q", p.Namespace(), e.ns)
	}
	if _, err := p.CreateInstance(context.Background(), createReq("ctl", "linux", "runfleet-linux-5-1")); err != nil {
		t.Fatalf("create through the kubeconfig: %v", err)
	}
	if len(e.pods(t)) != 1 {
		t.Fatal("no pod made through the kubeconfig")
	}

	// In a pod (KUBERNETES_SERVICE_HOST set, no kubeconfig named) the
	// provider uses the pod's ServiceAccount: here there is no token
	// file, and the error says so.
	t.Setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "6443")
	s, _ = kubernetes.ParseSettings(map[string]any{"image": "runner:1"})
	_, err = kubernetes.New(s, kubernetes.Options{Ownership: kubernetes.Ownership{ControllerID: "ctl", PoolID: "p"}})
	if err == nil || !strings.Contains(err.Error(), "serviceaccount") {
		t.Fatalf("in-cluster New = %v; want the in-cluster config's missing token", err)
	}
}

func hasVolume(pod corev1.Pod, name string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Name == name {
			return true
		}
	}
	return false
}
