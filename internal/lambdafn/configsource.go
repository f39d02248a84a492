package lambdafn

import (
	"context"
	"errors"
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
	if err := refuseScaleSetPools(cfg); err != nil {
		return nil, fmt.Errorf("config parameter %s: %w", env.ConfigParameter, err)
	}
	clearStandIns(cfg, role)
	return cfg, nil
}

// refuseScaleSetPools refuses a pool fed by a runner scale set: the stack
// runs no listener yet, and webhooks skip such a pool, so it would get no
// job at all. `runfleet serve` runs them.
func refuseScaleSetPools(cfg *config.Config) error {
	var problems []error
	for i, p := range cfg.Pools {
		if p.ScaleSet != nil {
			problems = append(problems, &config.FieldError{
				Field:   fmt.Sprintf("pools[%d].scale_set", i),
				Problem: "the AWS stack runs no scale-set listener yet: feed the pool by webhooks here, or run it under `runfleet serve`",
			})
		}
	}
	return errors.Join(problems...)
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
