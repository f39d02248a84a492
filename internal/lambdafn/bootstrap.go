package lambdafn

import (
	"context"
	"fmt"
	"strings"

	"github.com/runfleet/runfleet/internal/metadata"
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
	a.Tokens, a.MetadataURL, a.tokenKey = tokens, env.MetadataURL, key
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
