package kubernetes

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/runfleet/runfleet/providers"
)

func request() providers.CreateRequest {
	return providers.CreateRequest{
		Name: "runfleet-linux-7-1", Pool: "linux", PoolID: "pool-id",
		MetadataURL: "https://runfleet.example/metadata/runfleet-linux-7-1", CallbackURL: "https://runfleet.example/callbacks/runfleet-linux-7-1",
		InstanceToken: "secret-token", Labels: []string{"self-hosted", "linux"},
	}
}

func TestBuildPodFromTemplate(t *testing.T) {
	own := Ownership{ControllerID: "ctl", PoolID: "pool-id"}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "ci", LabelController: "someone-else"}},
		Spec: corev1.PodSpec{
			ServiceAccountName: "runner",
			NodeSelector:       map[string]string{"kubernetes.io/arch": "arm64"},
			Tolerations:        []corev1.Toleration{{Key: "ci", Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{
				{Name: "dind", Image: "docker:dind"},
				{Name: "runner", Image: "ghcr.io/actions/actions-runner:latest", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")},
				}},
			},
		},
	}
	pod, err := buildPod(own, "ns", tmpl, Settings{Container: "runner"}, func() providers.CreateRequest {
		r := request()
		r.Shape = &providers.Shape{MinCPU: 2, MinMemoryGiB: 8, MaxCPU: 8}
		return r
	}())
	if err != nil {
		t.Fatal(err)
	}
	if pod.Labels[LabelController] != "ctl" || pod.Labels[LabelPoolID] != "pool-id" || pod.Labels["team"] != "ci" {
		t.Errorf("labels = %v; want runfleet's ownership (not the template's) and the template's own", pod.Labels)
	}
	if pod.Annotations[AnnotationInstance] != "runfleet-linux-7-1" || pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("annotations %v, restart policy %q", pod.Annotations, pod.Spec.RestartPolicy)
	}
	if pod.Spec.ServiceAccountName != "runner" || len(pod.Spec.Tolerations) != 1 || pod.Spec.NodeSelector["kubernetes.io/arch"] != "arm64" {
		t.Errorf("template's spec not kept: %+v", pod.Spec)
	}
	runner := pod.Spec.Containers[1]
	if len(pod.Spec.Containers[0].VolumeMounts) != 0 {
		t.Error("a sidecar mounts the bootstrap Secret; only the runner container may")
	}
	if len(runner.VolumeMounts) != 1 || runner.VolumeMounts[0].MountPath != BootstrapMountPath || !runner.VolumeMounts[0].ReadOnly {
		t.Errorf("runner mounts %+v", runner.VolumeMounts)
	}
	vol := pod.Spec.Volumes[len(pod.Spec.Volumes)-1]
	if vol.Secret == nil || vol.Secret.SecretName != secretName(pod.Name) {
		t.Errorf("volume %+v; want the pod's own bootstrap Secret", vol)
	}
	cpu, mem, maxCPU := runner.Resources.Requests[corev1.ResourceCPU], runner.Resources.Requests[corev1.ResourceMemory], runner.Resources.Limits[corev1.ResourceCPU]
	if cpu.String() != "4" || mem.String() != "8Gi" || maxCPU.String() != "8" {
		t.Errorf("resources %+v; want the template's 4 CPUs kept (more than the shape's 2), 8Gi, limit 8", runner.Resources)
	}
	for _, e := range runner.Env {
		if e.Value == "secret-token" {
			t.Error("the instance token is in an environment variable")
		}
	}
	if tmpl.Spec.Containers[1].VolumeMounts != nil {
		t.Error("buildPod changed the template")
	}
}

func TestBuildPodFromImageOnly(t *testing.T) {
	pod, err := buildPod(Ownership{ControllerID: "ctl", PoolID: "p"}, "ns", corev1.PodTemplateSpec{}, Settings{Container: "runner", Image: "runner:1"}, request())
	if err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Image != "runner:1" || len(pod.Spec.Containers[0].Command) != 2 {
		t.Errorf("containers %+v; want one runner container running the bootstrap script", pod.Spec.Containers)
	}
	if _, err := buildPod(Ownership{}, "ns", corev1.PodTemplateSpec{}, Settings{Container: "runner"}, request()); err == nil {
		t.Error("a template without the runner container and no image built a pod")
	}
}

func TestBuildSecretHoldsTheBootstrapOnly(t *testing.T) {
	s := buildSecret(Ownership{ControllerID: "ctl", PoolID: "p"}, "ns", request())
	if s.StringData[keyInstanceToken] != "secret-token" || s.StringData[keyMetadataURL] == "" || s.Name != "runfleet-linux-7-1-bootstrap" {
		t.Errorf("secret %+v", s)
	}
	if s.Labels[LabelController] != "ctl" || s.Labels[LabelPoolID] != "p" {
		t.Errorf("labels %v", s.Labels)
	}
}
