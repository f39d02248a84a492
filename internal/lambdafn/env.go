package lambdafn

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/runfleet/runfleet/internal/telemetry"
)

// Role says which of the four functions a process is. It decides which
// secrets the function reads (least privilege: the webhook function never
// sees the GitHub key, the others never see the webhook secret).
type Role string

// The four functions of template.yaml.
const (
	RoleWebhook     Role = "webhook"
	RoleWorker      Role = "worker"
	RoleForceDelete Role = "forcedelete"
	RoleReconciler  Role = "reconciler"
)

func (r Role) valid() bool {
	switch r {
	case RoleWebhook, RoleWorker, RoleForceDelete, RoleReconciler:
		return true
	}
	return false
}

// usesWebhookSecret: only intake verifies signatures.
func (r Role) usesWebhookSecret() bool { return r == RoleWebhook }

// usesGitHub: every function but intake registers or removes runners.
func (r Role) usesGitHub() bool { return r != RoleWebhook }

// Environment variables template.yaml sets (see notes/lambda-contract.md).
const (
	EnvTable            = "RUNFLEET_TABLE"
	EnvQueueURL         = "RUNFLEET_QUEUE_URL"
	EnvConfigParameter  = "RUNFLEET_CONFIG_PARAMETER"
	EnvWebhookSecretARN = "RUNFLEET_WEBHOOK_SECRET_ARN"
	EnvGitHubSecretARN  = "RUNFLEET_GITHUB_SECRET_ARN"
	EnvLogLevel         = "LOG_LEVEL"
)

// Env is what a function reads from its environment. Secrets are never in
// it: only the ARNs of the Secrets Manager secrets that hold them.
type Env struct {
	Table            string
	QueueURL         string
	ConfigParameter  string
	WebhookSecretARN string
	GitHubSecretARN  string
	LogLevel         slog.Level
}

// ReadEnv reads and checks the environment of a function in role, naming
// every missing or invalid variable at once. lookup is os.LookupEnv outside
// tests.
func ReadEnv(role Role, lookup func(string) (string, bool)) (Env, error) {
	if !role.valid() {
		return Env{}, fmt.Errorf("lambdafn: unknown role %q", role)
	}
	get := func(name string) string {
		v, _ := lookup(name)
		return strings.TrimSpace(v)
	}
	env := Env{
		Table:            get(EnvTable),
		QueueURL:         get(EnvQueueURL),
		ConfigParameter:  get(EnvConfigParameter),
		WebhookSecretARN: get(EnvWebhookSecretARN),
		GitHubSecretARN:  get(EnvGitHubSecretARN),
	}
	var problems []error
	for _, required := range []struct{ name, value string }{
		{EnvTable, env.Table},
		{EnvQueueURL, env.QueueURL},
		{EnvConfigParameter, env.ConfigParameter},
	} {
		if required.value == "" {
			problems = append(problems, fmt.Errorf("%s is not set", required.name))
		}
	}
	// The GitHub secret stays optional here: with github.simulated there is
	// none, and a config that needs it names the variable when it is parsed.
	if role.usesWebhookSecret() && env.WebhookSecretARN == "" {
		problems = append(problems, fmt.Errorf("%s is not set (the webhook function verifies every delivery with it)", EnvWebhookSecretARN))
	}
	level, err := telemetry.ParseLevel(get(EnvLogLevel))
	if err != nil {
		problems = append(problems, fmt.Errorf("%s: %w", EnvLogLevel, err))
	}
	env.LogLevel = level
	if len(problems) > 0 {
		return Env{}, fmt.Errorf("lambdafn: %s function environment is incomplete: %w", role, errors.Join(problems...))
	}
	return env, nil
}
