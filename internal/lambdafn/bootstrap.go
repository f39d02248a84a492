package lambdafn

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/engine"
	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/providers"
)

// loadBootstrap reads the instance token key for the functions that use
// it: the metadata function always, the worker when it has a metadata URL.
// The key lives in a Secrets Manager secret the stack generates; it is
// never in the config or the environment.
func (a *App) loadBootstrap(ctx context.Context, env Env, secrets SecretReader) error {
	needed := a.Role == RoleMetadata || (a.Role == RoleWorker && env.MetadataURL != "")
	if !needed {
		return nil
	}
	key, err := readTokenKey(ctx, secrets, env.InstanceTokenKeyARN)
	if err != nil {
		return err
	}
	tokens, err := metadata.NewTokens(key, a.Config.ControllerID, nil)
	if err != nil {
		return fmt.Errorf("lambdafn: instance token key from %s: %w", env.InstanceTokenKeyARN, err)
	}
	a.Tokens, a.MetadataURL = tokens, env.MetadataURL
	return nil
}

// readTokenKey fetches the key; surrounding whitespace is not part of it.
func readTokenKey(ctx context.Context, secrets SecretReader, arn string) ([]byte, error) {
	if arn == "" {
		return nil, fmt.Errorf("lambdafn: %s is not set", EnvInstanceTokenKeyARN)
	}
	lookup := &secretLookup{ctx: ctx, client: secrets}
	value, err := lookup.fetch(arn)
	if err != nil {
		return nil, fmt.Errorf("lambdafn: read the instance token key from secret %s: %w", arn, err)
	}
	return []byte(strings.TrimSpace(value)), nil
}

// bootstrapOptions turns runner bootstrap on in a worker's engine: tokens
// are minted and providers get the metadata function's URLs.
func (a *App) bootstrapOptions(o engine.Options) engine.Options {
	if a.Tokens == nil || a.MetadataURL == "" {
		return o
	}
	o.MetadataURL, o.CallbackURL = metadata.BaseURLs(a.MetadataURL)
	o.InstanceToken = a.Tokens.Mint
	return o
}

// unusedProviders stands in for every pool's provider in a function that
// never calls one (the engine wants a provider per pool). Were it ever
// called, the error says so.
func unusedProviders(cfg *config.Config) map[string]providers.Provider {
	out := make(map[string]providers.Provider, len(cfg.Pools))
	for _, p := range cfg.Pools {
		out[p.Name] = unusedProvider{}
	}
	return out
}

type unusedProvider struct{}

var errNoProvider = errors.New("lambdafn: this function has no provider (it holds no cloud permissions)")

func (unusedProvider) CreateInstance(context.Context, providers.CreateRequest) (providers.Instance, error) {
	return providers.Instance{}, errNoProvider
}
func (unusedProvider) DeleteInstance(context.Context, string) error { return errNoProvider }
func (unusedProvider) GetInstance(context.Context, string) (providers.Instance, error) {
	return providers.Instance{}, errNoProvider
}
func (unusedProvider) ListInstances(context.Context, string) ([]providers.Instance, error) {
	return nil, errNoProvider
}
func (unusedProvider) RemoveAllInstances(context.Context) error    { return errNoProvider }
func (unusedProvider) StartInstance(context.Context, string) error { return errNoProvider }
func (unusedProvider) StopInstance(context.Context, string) error  { return errNoProvider }
