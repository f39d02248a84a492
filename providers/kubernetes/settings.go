package kubernetes

import (
	"bytes"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/runfleet/runfleet/providers/settings"
)

// Type is the provider type name in config (pools[].provider.type).
const Type = "kubernetes"

// DefaultContainer is the name of the runner's container in the pod
// template when the settings name none.
const DefaultContainer = "runner"

// Settings configure the Kubernetes provider of one pool
// (pools[].provider.settings).
type Settings struct {
	// Namespace the pool's pods and Secrets live in; empty = the
	// namespace runfleet itself runs in (in-cluster), else "default".
	Namespace string
	// Kubeconfig is a kubeconfig file and Context a context in it; both
	// empty = in-cluster config when running in a pod, otherwise the
	// usual kubeconfig (KUBECONFIG, ~/.kube/config).
	Kubeconfig string
	Context    string
	// PodTemplate names a PodTemplate object in Namespace, read at every
	// create (so editing it changes the next pods without a restart).
	PodTemplate string
	// Template is an inline pod template (metadata + spec), used when
	// PodTemplate is empty.
	Template *corev1.PodTemplateSpec
	// Image, when set, replaces the runner container's image.
	Image string
	// Container names the runner's container in the template.
	Container string
}

// Setting keys, in the order errors list them.
const (
	keyNamespace   = "namespace"
	keyKubeconfig  = "kubeconfig"
	keyContext     = "context"
	keyPodTemplate = "pod_template"
	keyTemplate    = "template"
	keyImage       = "image"
	keyContainer   = "container"
)

var settingKeys = []string{keyNamespace, keyKubeconfig, keyContext, keyPodTemplate, keyTemplate, keyImage, keyContainer}

// ParseSettings reads and checks a pool's provider settings; every problem
// is reported at once.
func ParseSettings(values map[string]any) (Settings, error) {
	r := settings.NewReader(values, settingKeys...)
	s := Settings{
		Namespace:   r.String(keyNamespace),
		Kubeconfig:  r.String(keyKubeconfig),
		Context:     r.String(keyContext),
		PodTemplate: r.String(keyPodTemplate),
		Image:       r.String(keyImage),
		Container:   r.String(keyContainer),
	}
	if s.Container == "" {
		s.Container = DefaultContainer
	}
	if raw := r.JSON(keyTemplate); raw != nil {
		var t corev1.PodTemplateSpec
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t); err != nil {
			r.Fail(keyTemplate, "not a pod template (metadata, spec): %v", err)
		} else {
			s.Template = &t
		}
	}
	if s.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(s.Namespace) {
			r.Fail(keyNamespace, "%q: %s", s.Namespace, msg)
		}
	}
	if s.PodTemplate != "" {
		for _, msg := range validation.IsDNS1123Subdomain(s.PodTemplate) {
			r.Fail(keyPodTemplate, "%q: %s", s.PodTemplate, msg)
		}
	}
	switch {
	case s.PodTemplate != "" && s.Template != nil:
		r.Fail(keyTemplate, "set pod_template or template, not both")
	case s.PodTemplate == "" && s.Template == nil && s.Image == "":
		r.Fail(keyImage, "required without pod_template or template (the runner container's image)")
	case s.Template != nil && s.Image == "" && !hasContainer(s.Template.Spec, s.Container):
		r.Fail(keyTemplate, "has no container %q (the runner's; set container to name another)", s.Container)
	}
	if err := r.Err(); err != nil {
		return Settings{}, fmt.Errorf("kubernetes provider: %w", err)
	}
	return s, nil
}

func hasContainer(spec corev1.PodSpec, name string) bool {
	for _, c := range spec.Containers {
		if c.Name == name {
			return true
		}
	}
	return false
}
