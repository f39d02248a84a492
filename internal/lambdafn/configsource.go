package lambdafn

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/runfleet/runfleet/internal/config"
)

// ParameterReader is the SSM call the functions make.
type ParameterReader interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// LoadConfig reads the runfleet YAML from the SSM parameter env names
// (String or SecureString) and parses it with the secrets role uses fetched
// from Secrets Manager. Secrets role has no use for are not fetched, and are
// absent from the returned config.
func LoadConfig(ctx context.Context, role Role, env Env, params ParameterReader, secrets SecretReader) (*config.Config, error) {
	out, err := params.GetParameter(ctx, &ssm.GetParameterInput{
		Name:           aws.String(env.ConfigParameter),
		WithDecryption: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("read config parameter %s: %w", env.ConfigParameter, err)
	}
	if out.Parameter == nil || out.Parameter.Value == nil {
		return nil, fmt.Errorf("read config parameter %s: it has no value", env.ConfigParameter)
	}
	lookup := &secretLookup{ctx: ctx, client: secrets, role: role, env: env}
	cfg, err := config.Parse([]byte(*out.Parameter.Value), lookup.lookup, errNoFilesOnLambda)
	if lookup.fetchErr != nil {
		return nil, fmt.Errorf("config parameter %s: %w", env.ConfigParameter, lookup.fetchErr)
	}
	if err != nil {
		return nil, fmt.Errorf("config parameter %s is invalid (%s):\n%w", env.ConfigParameter, lookup.hint(), err)
	}
	clearStandIns(cfg, role)
	return cfg, nil
}

// clearStandIns removes the placeholders given for secrets role does not
// use, so nothing can mistake one for a real secret.
func clearStandIns(cfg *config.Config, role Role) {
	if !role.usesWebhookSecret() {
		cfg.Webhook.Secret = nil
	}
	if !role.usesGitHub() {
		cfg.GitHub.Token = ""
		if cfg.GitHub.App != nil {
			cfg.GitHub.App.PrivateKey = nil
		}
		for i := range cfg.GitHub.ExtraApps {
			cfg.GitHub.ExtraApps[i].PrivateKey = nil
		}
	}
}
