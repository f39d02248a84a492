package lambdafn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/github"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
	"github.com/runfleet/runfleet/providers"
	"github.com/runfleet/runfleet/providers/simulated"
)

// buildProviders makes one provider per pool, reporting every pool's problem
// at once. Only the simulated provider is in this build so far.
func buildProviders(cfg *config.Config) (map[string]providers.Provider, error) {
	out := make(map[string]providers.Provider, len(cfg.Pools))
	var problems []error
	for i, pool := range cfg.Pools {
		switch pool.Provider.Type {
		case simulated.Type:
			p, err := simulated.New(pool.Provider.Settings)
			if err != nil {
				problems = append(problems, &config.FieldError{Field: fmt.Sprintf("pools[%d].provider.settings", i), Problem: err.Error()})
				continue
			}
			out[pool.Name] = p
		default:
			problems = append(problems, &config.FieldError{
				Field: fmt.Sprintf("pools[%d].provider.type", i),
				Problem: fmt.Sprintf("pool %q: provider type %q is not in this build of the Lambda functions yet (available: %s)",
					pool.Name, pool.Provider.Type, simulated.Type),
			})
		}
	}
	return out, errors.Join(problems...)
}

// buildGitHub returns the GitHub client the config asks for. The simulation
// keeps its runners in this process only, so on Lambda each function (and
// each execution environment) sees a different GitHub: fine for a demo,
// never for real jobs, hence the loud warning.
func buildGitHub(cfg *config.Config, log *slog.Logger) (github.GitHub, error) {
	if cfg.GitHub.Simulated {
		log.Warn("GITHUB IS SIMULATED: no real runner will ever be registered; github.simulated is for demos and tests only",
			"github_simulated", true)
		return ghsim.New(), nil
	}
	return nil, &config.FieldError{
		Field:   "github",
		Problem: "the real GitHub client is not in this build of the Lambda functions yet; set github.simulated: true to try runfleet without GitHub",
	}
}

// unusedGitHub stands in for GitHub in the webhook function, which only
// records and enqueues: were the engine ever to call GitHub from intake,
// the error says so rather than acting on a client with no credentials.
type unusedGitHub struct{}

var errNoGitHubInIntake = errors.New("lambdafn: the webhook function has no GitHub client (it holds no GitHub credentials)")

func (unusedGitHub) GenerateJITConfig(context.Context, github.JITRequest) (*github.JITConfig, error) {
	return nil, errNoGitHubInIntake
}

func (unusedGitHub) RemoveRunner(context.Context, github.RunnerRef) error { return errNoGitHubInIntake }

func (unusedGitHub) ListRunners(context.Context, github.Owner) ([]github.Runner, error) {
	return nil, errNoGitHubInIntake
}
