// Package kubernetes_test checks deploy/kubernetes against a real API
// server (internal/kubetest): every manifest applies (server-side dry run,
// then for real), the config in the ConfigMap loads, and the ServiceAccount's
// Role allows what runfleet does and forbids what it does not need.
package kubernetes_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/kubetest"
	"github.com/runfleet/runfleet/providers/kubernetes"
)

func TestMain(m *testing.M) { os.Exit(kubetest.Main(m)) }

// manifests decodes every object in deploy/kubernetes/*.yaml.
func manifests(t *testing.T) []runtime.Object {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var out []runtime.Object
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, doc := range strings.Split(string(b), "\n---\n") {
			js, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(js, nil, nil)
			if err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			out = append(out, obj)
		}
	}
	return out
}

// apply creates obj in ns (dry: the server validates, admits and
// discards it).
func apply(ctx context.Context, c k8s.Interface, ns string, obj runtime.Object, dry bool) error {
	opts := metav1.CreateOptions{FieldManager: "runfleet-test"}
	if dry {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	var err error
	switch o := obj.(type) {
	case *corev1.ServiceAccount:
		_, err = c.CoreV1().ServiceAccounts(ns).Create(ctx, o, opts)
	case *corev1.ConfigMap:
		_, err = c.CoreV1().ConfigMaps(ns).Create(ctx, o, opts)
	case *corev1.Service:
		_, err = c.CoreV1().Services(ns).Create(ctx, o, opts)
	case *corev1.PodTemplate:
		_, err = c.CoreV1().PodTemplates(ns).Create(ctx, o, opts)
	case *rbacv1.Role:
		_, err = c.RbacV1().Roles(ns).Create(ctx, o, opts)
	case *rbacv1.RoleBinding:
		_, err = c.RbacV1().RoleBindings(ns).Create(ctx, o, opts)
	case *appsv1.Deployment:
		_, err = c.AppsV1().Deployments(ns).Create(ctx, o, opts)
	default:
		return &unknownKind{obj}
	}
	return err
}

type unknownKind struct{ obj runtime.Object }

func (u *unknownKind) Error() string {
	return "the test cannot apply a " + u.obj.GetObjectKind().GroupVersionKind().Kind + "; add it to apply"
}

func TestManifestsApplyAndDescribeTwoReplicasOnPostgres(t *testing.T) {
	srv := kubetest.Shared(t)
	c := srv.Client(t)
	ns := srv.Namespace(t, "deploy")
	ctx := context.Background()
	objs := manifests(t)
	kinds := map[string]int{}
	for _, obj := range objs {
		if err := apply(ctx, c, ns, obj, true); err != nil {
			t.Errorf("server-side dry run of %T: %v", obj, err)
		}
		kinds[obj.GetObjectKind().GroupVersionKind().Kind]++
		switch o := obj.(type) {
		case *appsv1.Deployment:
			checkDeployment(t, o)
		case *corev1.ConfigMap:
			checkConfig(t, o)
		}
	}
	for _, k := range []string{"ServiceAccount", "Role", "RoleBinding", "Deployment", "Service", "ConfigMap", "PodTemplate"} {
		if kinds[k] != 1 {
			t.Errorf("%d %s manifests; want one", kinds[k], k)
		}
	}
	// A dry run leaves nothing.
	if l, _ := c.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{}); len(l.Items) != 0 {
		t.Error("the dry run made a Deployment")
	}
}

func checkDeployment(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	spec := d.Spec.Template.Spec
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 || spec.ServiceAccountName != "runfleet" {
		t.Errorf("deployment: replicas %v, service account %q; want 2 and runfleet", d.Spec.Replicas, spec.ServiceAccountName)
	}
	c := spec.Containers[0]
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
			t.Errorf("deployment: %s probe %+v; want GET /healthz", name, p)
		}
	}
}

// checkConfig loads the ConfigMap's config.yaml as serve would (secrets
// from the environment the Deployment fills) and its pool's settings.
func checkConfig(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	env := map[string]string{
		"RUNFLEET_PG_DSN": "postgres://runfleet:pw@db:5432/runfleet", "RUNFLEET_WEBHOOK_SECRET": "w", "RUNFLEET_API_TOKEN": "a",
		"RUNFLEET_INSTANCE_TOKEN_KEY": strings.Repeat("k", 32), "RUNFLEET_GITHUB_APP_KEY": testAppKey,
	}
	cfg, err := config.Parse([]byte(cm.Data["config.yaml"]), func(k string) (string, bool) { v, ok := env[k]; return v, ok }, os.ReadFile)
	if err != nil {
		t.Fatalf("configmap config.yaml: %v", err)
	}
	if cfg.Store.Kind != "postgres" || len(cfg.Pools) != 1 || cfg.Pools[0].Provider.Type != kubernetes.Type {
		t.Fatalf("config: store %q, pools %+v", cfg.Store.Kind, cfg.Pools)
	}
	if _, err := kubernetes.ParseSettings(cfg.Pools[0].Provider.Settings); err != nil {
		t.Fatalf("pool settings: %v", err)
	}
}

func TestRoleAllowsTheProviderAndForbidsTheRest(t *testing.T) {
	srv := kubetest.Shared(t)
	admin := srv.Client(t)
	ns := srv.Namespace(t, "rbac")
	other := srv.Namespace(t, "rbac-other")
	ctx := context.Background()
	for _, obj := range manifests(t) {
		if _, isDeployment := obj.(*appsv1.Deployment); isDeployment {
			continue // no controller would start it; the Role is what is tested
		}
		if err := apply(ctx, admin, ns, obj, false); err != nil {
			t.Fatalf("apply %T: %v", obj, err)
		}
	}
	sa := srv.ServiceAccountClient(t, ns, "runfleet")

	// What the provider does, as the ServiceAccount, passes: a create, a
	// list, a delete of pods and Secrets from the PodTemplate.
	s, err := kubernetes.ParseSettings(map[string]any{"namespace": ns, "pod_template": "runfleet-runner"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := kubernetes.New(s, kubernetes.Options{Ownership: kubernetes.Ownership{ControllerID: "ctl", PoolID: "pool"}, Config: srv.ServiceAccountConfig(t, ns, "runfleet")})
	if err != nil {
		t.Fatal(err)
	}
	if err := providerRoundTrip(ctx, p); err != nil {
		t.Fatalf("the provider, as the ServiceAccount: %v", err)
	}

	// What it does not need is forbidden.
	forbidden := map[string]error{
		"list pods in another namespace": func() error {
			_, err := sa.CoreV1().Pods(other).List(ctx, metav1.ListOptions{})
			return err
		}(),
		"list nodes": func() error { _, err := sa.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); return err }(),
		"read secrets in another namespace": func() error {
			_, err := sa.CoreV1().Secrets(other).List(ctx, metav1.ListOptions{})
			return err
		}(),
		"create a deployment": func() error {
			_, err := sa.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
			return err
		}(),
		"read its own Role": func() error {
			_, err := sa.RbacV1().Roles(ns).Get(ctx, "runfleet", metav1.GetOptions{})
			return err
		}(),
		"write a pod's status": func() error {
			_, err := sa.CoreV1().Pods(ns).UpdateStatus(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.UpdateOptions{})
			return err
		}(),
	}
	for call, err := range forbidden {
		if !apierrors.IsForbidden(err) {
			t.Errorf("%s: %v; want 403 Forbidden", call, err)
		}
	}
}
