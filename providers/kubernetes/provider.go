package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/runfleet/runfleet/providers"
)

// Operation names in errors.
const (
	opCreate    = "CreateInstance"
	opDelete    = "DeleteInstance"
	opGet       = "GetInstance"
	opList      = "ListInstances"
	opRemoveAll = "RemoveAllInstances"
	opStart     = "StartInstance"
	opStop      = "StopInstance"
)

// orphanSecretAge is how old a bootstrap Secret without its pod must be
// before a list removes it: a create makes the Secret just before the pod.
const orphanSecretAge = 2 * time.Minute

var _ providers.Provider = (*Provider)(nil)

// ErrCannotStop is a start or stop: a pod cannot be stopped and started
// again.
var ErrCannotStop = errors.New("a pod cannot be stopped or started; delete it instead")

// Options are what New needs besides Settings.
type Options struct {
	Ownership Ownership
	// Config is the API server and credentials; nil = from Settings
	// (in-cluster or kubeconfig).
	Config *rest.Config
	// Now is the clock orphaned Secrets are aged by; nil = time.Now.
	Now func() time.Time
	Log *slog.Logger
}

// Provider runs runners as pods. It is safe for concurrent use.
type Provider struct {
	api       *core
	namespace string
	settings  Settings
	own       Ownership
	now       func() time.Time
	log       *slog.Logger
}

// New builds the provider of one pool.
func New(s Settings, o Options) (*Provider, error) {
	if o.Ownership.ControllerID == "" || o.Ownership.PoolID == "" {
		return nil, errors.New("kubernetes provider: controller id and pool id are required")
	}
	cfg, ns := o.Config, s.Namespace
	if cfg == nil {
		c, inCluster, err := restConfig(s)
		if err != nil {
			return nil, fmt.Errorf("kubernetes provider: %w", err)
		}
		cfg = c
		if ns == "" {
			ns = defaultNamespace(s, inCluster)
		}
	}
	if ns == "" {
		ns = "default"
	}
	api, err := newCore(cfg, ns)
	if err != nil {
		return nil, fmt.Errorf("kubernetes provider: %w", err)
	}
	p := &Provider{api: api, namespace: ns, settings: s, own: o.Ownership, now: o.Now, log: o.Log}
	if p.now == nil {
		p.now = time.Now
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	return p, nil
}

// Namespace is where the provider makes its pods.
func (p *Provider) Namespace() string { return p.namespace }

// CreateInstance makes the bootstrap Secret, then the pod that mounts it,
// then makes the pod the Secret's owner. A create retried after a timeout
// finds its own pod and returns it.
func (p *Provider) CreateInstance(ctx context.Context, req providers.CreateRequest) (providers.Instance, error) {
	if err := providers.CheckPool(opCreate, p.own.PoolID, req.PoolID); err != nil {
		return providers.Instance{}, err
	}
	if err := checkBootstrap(req); err != nil {
		return providers.Instance{}, &providers.Error{Op: opCreate, Instance: req.Name, Fault: err.Error()}
	}
	tmpl, err := p.template(ctx)
	if err != nil {
		return providers.Instance{}, callError(opCreate, req.Name, "read pod template", err)
	}
	pod, err := buildPod(p.own, p.namespace, tmpl, p.settings, req)
	if err != nil {
		return providers.Instance{}, &providers.Error{Op: opCreate, Instance: req.Name, Fault: err.Error()}
	}
	secret := buildSecret(p.own, p.namespace, req)
	if err := p.putSecret(ctx, secret); err != nil {
		return providers.Instance{}, callError(opCreate, req.Name, "create Secret", err)
	}
	made := &corev1.Pod{}
	err = p.api.create(ctx, "pods", pod, made)
	if apierrors.IsAlreadyExists(err) {
		err = p.api.get(ctx, "pods", pod.Name, made)
		if err == nil && (!p.own.owns(made.Labels) || made.Annotations[AnnotationInstance] != req.Name) {
			return providers.Instance{}, &providers.Error{Op: opCreate, Instance: req.Name,
				Fault: fmt.Sprintf("pod %s/%s exists and is not this pool's runner %q", p.namespace, pod.Name, req.Name)}
		}
	}
	if err != nil {
		p.deleteSecret(ctx, secret.Name)
		return providers.Instance{}, callError(opCreate, req.Name, "create pod", err)
	}
	p.adoptSecret(ctx, secret.Name, made)
	p.log.InfoContext(ctx, "kubernetes: runner pod created", "instance", req.Name, "pool", req.Pool,
		"namespace", p.namespace, "pod", made.Name, "uid", string(made.UID))
	return toInstance(made, classify(made)), nil
}

// template is the pool's pod template: the named PodTemplate object, the
// inline one, or an empty one the image setting fills.
func (p *Provider) template(ctx context.Context) (corev1.PodTemplateSpec, error) {
	switch {
	case p.settings.PodTemplate != "":
		pt := &corev1.PodTemplate{}
		if err := p.api.get(ctx, "podtemplates", p.settings.PodTemplate, pt); err != nil {
			return corev1.PodTemplateSpec{}, err
		}
		return pt.Template, nil
	case p.settings.Template != nil:
		return *p.settings.Template, nil
	default:
		return corev1.PodTemplateSpec{}, nil
	}
}

// putSecret creates the Secret, or replaces the data of this pool's own
// Secret of that name (a retried create's).
func (p *Provider) putSecret(ctx context.Context, s *corev1.Secret) error {
	err := p.api.create(ctx, "secrets", s, &corev1.Secret{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	cur := &corev1.Secret{}
	if err := p.api.get(ctx, "secrets", s.Name, cur); err != nil {
		return err
	}
	if !p.own.owns(cur.Labels) {
		return fmt.Errorf("secret %s/%s exists and is not this pool's", p.namespace, s.Name)
	}
	cur.StringData = s.StringData
	return p.api.update(ctx, "secrets", cur.Name, cur, &corev1.Secret{})
}

// adoptSecret makes pod the Secret's owner, so a cluster's garbage
// collector removes the Secret with the pod. Failing is logged, not
// fatal: the provider deletes the Secret itself with the pod.
func (p *Provider) adoptSecret(ctx context.Context, name string, pod *corev1.Pod) {
	patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"Pod","name":%q,"uid":%q}]}}`, pod.Name, pod.UID)
	if err := p.api.patch(ctx, "secrets", name, types.MergePatchType, []byte(patch)); err != nil {
		p.log.WarnContext(ctx, "kubernetes: cannot make the pod own its bootstrap Secret; it is deleted with the pod all the same",
			"pod", pod.Name, "secret", name, "err", err)
	}
}

func toInstance(pod *corev1.Pod, st podState) providers.Instance {
	name := pod.Annotations[AnnotationInstance]
	if name == "" {
		name = pod.Name
	}
	inst := providers.Instance{
		ProviderID: string(pod.UID),
		Name:       name,
		Status:     st.Status,
		OSType:     "linux",
	}
	if pod.Spec.NodeSelector != nil {
		inst.OSArch = pod.Spec.NodeSelector[corev1.LabelArchStable]
	}
	if pod.Status.PodIP != "" {
		inst.Addresses = []providers.Address{{Address: pod.Status.PodIP, Type: "private"}}
	}
	return inst
}

func callError(op, instance, call string, err error) error {
	return &providers.Error{Op: op, Instance: instance, Fault: call + ": " + err.Error(), Err: err}
}

func notFound(op, instance string) error {
	return &providers.Error{Op: op, Instance: instance, Fault: "no live runner pod of this pool has that uid or name", Err: providers.ErrNotFound}
}
