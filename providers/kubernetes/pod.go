package kubernetes

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/runfleet/runfleet/providers"
)

// Where the runner container finds its bootstrap Secret, and its keys.
const (
	BootstrapMountPath = "/run/runfleet"
	bootstrapVolume    = "runfleet-bootstrap"
	keyMetadataURL     = "metadata-url"
	keyCallbackURL     = "callback-url"
	keyInstanceToken   = "instance-token"
	keyBootstrapScript = "bootstrap.sh"
)

// bootstrapScript is the runner container's command when the template
// gives it none: fetch this runner's install script from the control
// plane with the instance token and run it, as the EC2 provider's user
// data does. It reads the token from the mounted Secret, never from an
// environment variable a `kubectl describe` would show.
const bootstrapScript = `#!/bin/bash
# runfleet: fetch this runner's install script from the control plane and run it.
set -euo pipefail
dir=/run/runfleet
metadata_url="$(cat "$dir/metadata-url")"
script="$(mktemp)"
for attempt in $(seq 1 30); do
  if curl -fsS --max-time 30 -H "Authorization: Bearer $(cat "$dir/instance-token")" -o "$script" "${metadata_url%/}/install-script"; then
    break
  fi
  if [ "$attempt" -eq 30 ]; then
    echo "runfleet: cannot fetch ${metadata_url%/}/install-script" >&2
    exit 1
  fi
  sleep 5
done
chmod 0700 "$script"
exec bash "$script"
`

// checkBootstrap refuses a create the pod could never bootstrap from.
func checkBootstrap(req providers.CreateRequest) error {
	if req.InstanceToken == "" {
		return errors.New("the create request has no instance token; the pod could not fetch its runner credentials")
	}
	u, err := url.Parse(req.MetadataURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("the create request's metadata URL %q is not an http(s) URL the pod can reach (set server.public_url)", req.MetadataURL)
	}
	return nil
}

// buildSecret is the Secret holding one pod's bootstrap credentials.
func buildSecret(own Ownership, namespace string, req providers.CreateRequest) *corev1.Secret {
	name := objectName(req.Name)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:        secretName(name),
			Namespace:   namespace,
			Labels:      own.labels(req.Name),
			Annotations: map[string]string{AnnotationInstance: req.Name, AnnotationPool: req.Pool},
		},
		Type: corev1.SecretTypeOpaque,
		StringData: map[string]string{
			keyMetadataURL:     req.MetadataURL,
			keyCallbackURL:     req.CallbackURL,
			keyInstanceToken:   req.InstanceToken,
			keyBootstrapScript: bootstrapScript,
		},
	}
}

// buildPod makes the runner pod for req from the pool's template: the
// template's metadata and spec, runfleet's labels (which a template cannot
// override), the bootstrap Secret mounted into the runner container only,
// and the granted shape as the runner container's resource requests.
func buildPod(own Ownership, namespace string, tmpl corev1.PodTemplateSpec, s Settings, req providers.CreateRequest) (*corev1.Pod, error) {
	tmpl = *tmpl.DeepCopy()
	name := objectName(req.Name)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   namespace,
			Labels:      tmpl.Labels,
			Annotations: tmpl.Annotations,
		},
		Spec: tmpl.Spec,
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	for k, v := range own.labels(req.Name) {
		pod.Labels[k] = v
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationInstance] = req.Name
	pod.Annotations[AnnotationPool] = req.Pool
	if len(req.Labels) > 0 {
		pod.Annotations["runfleet.dev/runner-labels"] = strings.Join(req.Labels, ",")
	}
	// A runner serves one job and exits; a restarted container would
	// register nothing (its JIT configuration is spent).
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever

	idx := -1
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == s.Container {
			idx = i
		}
	}
	if idx < 0 {
		if s.Image == "" {
			return nil, fmt.Errorf("the pod template has no container %q (the runner's)", s.Container)
		}
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: s.Container})
		idx = len(pod.Spec.Containers) - 1
	}
	c := &pod.Spec.Containers[idx]
	if s.Image != "" {
		c.Image = s.Image
	}
	if c.Image == "" {
		return nil, fmt.Errorf("the runner container %q has no image", s.Container)
	}
	if len(c.Command) == 0 && len(c.Args) == 0 {
		c.Command = []string{"/bin/bash", BootstrapMountPath + "/" + keyBootstrapScript}
	}
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "RUNFLEET_BOOTSTRAP_DIR", Value: BootstrapMountPath},
		corev1.EnvVar{Name: "RUNFLEET_INSTANCE", Value: req.Name},
	)
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: bootstrapVolume, MountPath: BootstrapMountPath, ReadOnly: true})
	mode := int32(0o400)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
		Name: bootstrapVolume,
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: secretName(name), DefaultMode: &mode,
		}},
	})
	if err := applyShape(c, req.Shape); err != nil {
		return nil, err
	}
	return pod, nil
}

// applyShape turns a granted shape into the runner container's resource
// requests (MinCPU vCPUs, MinMemoryGiB GiB) and, when the shape caps them,
// limits. A shape never lowers what the template already requests.
func applyShape(c *corev1.Container, shape *providers.Shape) error {
	if shape == nil {
		return nil
	}
	set := func(list *corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		if cur, ok := (*list)[name]; ok && cur.Cmp(q) >= 0 {
			return
		}
		(*list)[name] = q
	}
	if shape.MinCPU > 0 {
		set(&c.Resources.Requests, corev1.ResourceCPU, *resource.NewQuantity(int64(shape.MinCPU), resource.DecimalSI))
	}
	if shape.MinMemoryGiB > 0 {
		set(&c.Resources.Requests, corev1.ResourceMemory, *resource.NewQuantity(int64(shape.MinMemoryGiB)<<30, resource.BinarySI))
	}
	if shape.MaxCPU > 0 {
		set(&c.Resources.Limits, corev1.ResourceCPU, *resource.NewQuantity(int64(shape.MaxCPU), resource.DecimalSI))
	}
	if shape.MaxMemoryGiB > 0 {
		set(&c.Resources.Limits, corev1.ResourceMemory, *resource.NewQuantity(int64(shape.MaxMemoryGiB)<<30, resource.BinarySI))
	}
	return nil
}
