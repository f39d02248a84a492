package kubetest

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

var nsSeq atomic.Int64

// Namespace makes a fresh namespace for one test (deleted namespaces stay
// Terminating here: no controller finishes them) with the default
// ServiceAccount the admission plugin wants a pod to have (no controller
// makes it either).
func (s *Server) Namespace(t tb, prefix string) string {
	t.Helper()
	c := s.Client(t)
	ctx := context.Background()
	name := fmt.Sprintf("%s-%d-%s", strings.ToLower(prefix), nsSeq.Add(1), randomHex(3))
	if len(name) > 63 {
		name = name[len(name)-63:]
	}
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kubetest: create namespace %s: %v", name, err)
	}
	if _, err := c.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kubetest: create the default ServiceAccount in %s: %v", name, err)
	}
	return name
}

// ServiceAccountConfig is a client config authenticated as a
// ServiceAccount (a token the API server issues for it), the way a pod
// running as it would be.
func (s *Server) ServiceAccountConfig(t tb, namespace, name string) *rest.Config {
	t.Helper()
	c := s.Client(t)
	tr, err := c.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name, &authenticationTokenRequest, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("kubetest: token for %s/%s: %v", namespace, name, err)
	}
	cfg := s.Config()
	cfg.BearerToken = tr.Status.Token
	return cfg
}

// ServiceAccountClient is ServiceAccountConfig's client.
func (s *Server) ServiceAccountClient(t tb, namespace, name string) k8s.Interface {
	t.Helper()
	c, err := k8s.NewForConfig(s.ServiceAccountConfig(t, namespace, name))
	if err != nil {
		t.Fatalf("kubetest: client: %v", err)
	}
	return c
}
