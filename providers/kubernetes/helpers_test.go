package kubernetes_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/runfleet/runfleet/internal/kubetest"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/kubernetes"
)

// env is one test's namespace on the shared API server.
type env struct {
	srv     *kubetest.Server
	ns      string
	kubelet kubetest.Kubelet
	clock   *testclock.Clock
}

func newEnv(t *testing.T) *env {
	t.Helper()
	srv := kubetest.Shared(t)
	ns := srv.Namespace(t, "prov")
	return &env{srv: srv, ns: ns, kubelet: kubetest.Kubelet{Client: srv.Client(t), Namespace: ns}, clock: testclock.AtRealNow()}
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// provider builds controller ctl's provider of pool in the env's namespace.
func (e *env) provider(t *testing.T, ctl, pool string, settings map[string]any) *kubernetes.Provider {
	t.Helper()
	if settings == nil {
		settings = map[string]any{"image": "ghcr.io/actions/actions-runner:latest"}
	}
	settings["namespace"] = e.ns
	s, err := kubernetes.ParseSettings(settings)
	if err != nil {
		t.Fatal(err)
	}
	p, err := kubernetes.New(s, kubernetes.Options{
		Ownership: kubernetes.Ownership{ControllerID: ctl, PoolID: runner.PoolID(ctl, pool)},
		Config:    e.srv.Config(), Now: e.clock.Now, Log: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func createReq(ctl, pool, name string) providers.CreateRequest {
	return providers.CreateRequest{
		Name: name, Pool: pool, PoolID: runner.PoolID(ctl, pool),
		MetadataURL: "http://runfleet.runfleet.svc:8080/metadata/" + name, CallbackURL: "http://runfleet.runfleet.svc:8080/callbacks/" + name,
		InstanceToken: "token-" + name,
	}
}

func (e *env) pods(t *testing.T) []corev1.Pod {
	t.Helper()
	l, err := e.srv.Client(t).CoreV1().Pods(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func (e *env) secrets(t *testing.T) []corev1.Secret {
	t.Helper()
	l, err := e.srv.Client(t).CoreV1().Secrets(e.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func names(list []providers.Instance) []string {
	out := make([]string, 0, len(list))
	for _, in := range list {
		out = append(out, in.Name)
	}
	return out
}
