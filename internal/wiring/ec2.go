//go:build !runfleet_noec2

package wiring

import (
	"context"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/ec2"
)

// The EC2 provider takes its AWS credentials, region and endpoint overrides
// from the environment (the Lambda role, a profile, AWS_ENDPOINT_URL_EC2).
// It tags, lists and deletes machines by the controller ID and the pool's
// provider-side id. The EC2 SDK roughly doubles a binary's size; build with
// -tags runfleet_noec2 to leave it out.
func init() {
	providerFactories[ec2.Type] = func(cfg *config.Config, pool *config.Pool, poolID string) (providers.Provider, error) {
		settings, err := ec2.ParseSettings(pool.Provider.Settings)
		if err != nil {
			return nil, err
		}
		return ec2.New(context.Background(), ec2.Ownership{ControllerID: cfg.ControllerID, PoolID: poolID}, settings)
	}
}
