package kubernetes

import (
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// namespaceFile is where a pod finds its own namespace.
const namespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// restConfig is the API server's address and credentials: in-cluster (the
// pod's ServiceAccount) when runfleet runs in a pod and no kubeconfig is
// named, otherwise the kubeconfig (Settings.Kubeconfig, else KUBECONFIG,
// else ~/.kube/config) and its context.
func restConfig(s Settings) (cfg *rest.Config, inCluster bool, err error) {
	if s.Kubeconfig == "" && s.Context == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		cfg, err := rest.InClusterConfig()
		return cfg, true, err
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if s.Kubeconfig != "" {
		rules.ExplicitPath = s.Kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: s.Context}
	cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	return cfg, false, err
}

// defaultNamespace is the namespace to use when the settings name none:
// runfleet's own in a pod, the kubeconfig context's otherwise.
func defaultNamespace(s Settings, inCluster bool) string {
	if inCluster {
		if b, err := os.ReadFile(namespaceFile); err == nil {
			return strings.TrimSpace(string(b))
		}
		return ""
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if s.Kubeconfig != "" {
		rules.ExplicitPath = s.Kubeconfig
	}
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: s.Context}).Namespace()
	if err != nil {
		return ""
	}
	return ns
}
