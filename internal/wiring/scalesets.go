package wiring

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/wiring/policy"
)

// ScaleSetPool is what a scale-set pool's listener is built from.
type ScaleSetPool struct {
	Pool        config.Pool
	Client      *scaleset.Client
	ScaleSet    string
	RunnerGroup string
}

// ScaleSets builds what the scale-set pools need: one scale-set client per
// owner, with gh minting its registration tokens, and the engine's GitHub
// port with those pools' runners registered and removed through their
// scale sets (scaleset.RoutedGitHub). A config without scale-set pools
// gets gh back unchanged.
func ScaleSets(cfg *config.Config, gh github.GitHub, log *slog.Logger) (github.GitHub, []ScaleSetPool, error) {
	var pools []ScaleSetPool
	routed := scaleset.RoutedGitHub{GitHub: gh, ByPool: map[string]scaleset.PoolRunners{}}
	clients := map[string]*scaleset.Client{}
	for i := range cfg.Pools {
		p := &cfg.Pools[i]
		if p.ScaleSet == nil {
			continue
		}
		tokens, ok := gh.(scaleset.RegistrationTokenSource)
		if !ok {
			return nil, nil, fieldError(fmt.Sprintf("pools[%d].scale_set", i),
				"a scale-set pool needs GitHub itself, through an App or a token, not github.simulated")
		}
		owner := policy.Pool(p).Owner
		client := clients[owner.String()]
		if client == nil {
			var err error
			client, err = scaleset.New(scaleset.Config{
				Owner:  owner,
				Tokens: tokens, GitHubURL: webURL(cfg.GitHub.BaseURL), APIURL: cfg.GitHub.BaseURL,
				Logger: log.With("owner", owner.String()),
			})
			if err != nil {
				return nil, nil, fieldError(fmt.Sprintf("pools[%d].scale_set", i), "%v", err)
			}
			clients[owner.String()] = client
		}
		routed.ByPool[p.Name] = &scaleset.Runners{Client: client, Group: p.RunnerGroup, Name: p.ScaleSet.Name}
		pools = append(pools, ScaleSetPool{Pool: *p, Client: client, ScaleSet: p.ScaleSet.Name, RunnerGroup: p.RunnerGroup})
	}
	if len(pools) == 0 {
		return gh, nil, nil
	}
	return routed, pools, nil
}

// webURL is GitHub's web root for an API root: "" (github.com) stays "",
// which the scale-set client reads as github.com; a GitHub Enterprise
// Server API root (https://host/api/v3) is its host.
func webURL(apiBase string) string {
	if apiBase == "" {
		return ""
	}
	return strings.TrimSuffix(strings.TrimSuffix(apiBase, "/"), "/api/v3")
}
