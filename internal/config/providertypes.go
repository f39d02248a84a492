package config

import (
	"errors"
	"slices"
)

// ProviderTypes are the provider types runfleet can build. Each provider
// package exports its own name (e.g. simulated.Type); config keeps only the
// names, so loading a config never links in a cloud SDK.
var ProviderTypes = []string{"simulated", "external", "ec2", "kubernetes"}

func knownProviderType(t string) bool {
	return slices.Contains(ProviderTypes, t)
}

// CheckProviderSettings runs check on every pool's provider type and
// settings, and names the pool in each error, e.g.
// "pools[1].provider.settings: failure_rate: must be between 0 and 1".
// Parse checks only the type names; whoever builds the providers calls this
// with each type's settings validation so bad settings fail at load as well.
func (c *Config) CheckProviderSettings(check func(providerType string, settings map[string]any) error) error {
	var p problems
	for i := range c.Pools {
		if err := check(c.Pools[i].Provider.Type, c.Pools[i].Provider.Settings); err != nil {
			p.add(poolField(i, "provider.settings"), "%v", err)
		}
	}
	return errors.Join(p...)
}
