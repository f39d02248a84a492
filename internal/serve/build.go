package serve

import (
	"errors"
	"fmt"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/github"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

// buildProviders makes one provider per pool. Every problem is a
// *config.FieldError naming the pool's field, and all are returned at once,
// in pool order.
func buildProviders(cfg *config.Config) (map[string]providers.Provider, error) {
	var problems []error
	out := make(map[string]providers.Provider, len(cfg.Pools))
	for i, pool := range cfg.Pools {
		switch pool.Provider.Type {
		case simulated.Type:
			p, err := simulated.New(pool.Provider.Settings)
			if err != nil {
				problems = append(problems, fieldError(fmt.Sprintf("pools[%d].provider.settings", i), "pool %q: %v", pool.Name, err))
				continue
			}
			out[pool.Name] = p
		default:
			problems = append(problems, fieldError(fmt.Sprintf("pools[%d].provider.type", i),
				"pool %q: provider type %q is not available yet in this build (available: %s)",
				pool.Name, pool.Provider.Type, simulated.Type))
		}
	}
	return out, errors.Join(problems...)
}

// buildGitHub returns the GitHub client the config asks for.
func buildGitHub(cfg *config.Config) (github.GitHub, error) {
	switch {
	case cfg.GitHub.Simulated:
		return ghsim.New(), nil
	case cfg.GitHub.App != nil:
		return nil, fieldError("github.app", "GitHub App authentication is not available yet in this build; set github.simulated: true to try runfleet without GitHub")
	default:
		return nil, fieldError("github", "token authentication (token_file/token_env) is not available yet in this build; set github.simulated: true to try runfleet without GitHub")
	}
}

func fieldError(field, format string, args ...any) error {
	return &config.FieldError{Field: field, Problem: fmt.Sprintf(format, args...)}
}
