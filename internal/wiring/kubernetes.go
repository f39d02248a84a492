//go:build !runfleet_nokubernetes && !lambda.norpc

package wiring

import (
	"log/slog"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/kubernetes"
)

// The Kubernetes provider reaches the API server with the pod's
// ServiceAccount when runfleet runs in the cluster, otherwise with a
// kubeconfig (settings kubeconfig/context, KUBECONFIG). It labels, lists and
// deletes pods by the controller ID and the pool's provider-side id.
// client-go adds ~7 MB to a stripped binary, so the Lambda functions (built
// with lambda.norpc) leave it out and stay under LAMBDA_MAX_BYTES; any
// other build can with -tags runfleet_nokubernetes.
func init() {
	providerFactories[kubernetes.Type] = func(cfg *config.Config, pool *config.Pool, poolID string) (providers.Provider, error) {
		settings, err := kubernetes.ParseSettings(pool.Provider.Settings)
		if err != nil {
			return nil, err
		}
		return kubernetes.New(settings, kubernetes.Options{
			Ownership: kubernetes.Ownership{ControllerID: cfg.ControllerID, PoolID: poolID},
			Log:       slog.Default().With("pool", pool.Name),
		})
	}
}
