package lambdafn

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/runfleet/runfleet/internal/telemetry"
)

// Role says which of the six functions a process is. It decides which
// environment variables it needs and which secrets it reads (least
// privilege: the webhook function never sees the GitHub key, the others
// never see the webhook secret).
type Role string

// The functions of template.yaml.
const (
	RoleWebhook     Role = "webhook"
	RoleWorker      Role = "worker"
	RoleForceDelete Role = "forcedelete"
	RoleReconciler  Role = "reconciler"
	// RoleMetadata serves runner bootstrap (internal/metadata) behind its
	// own Function URL; see metadata.go.
	RoleMetadata Role = "metadata"
	// RoleListener runs the scale-set pools' listeners on a schedule (see
	// package listen).
	RoleListener Role = "listener"
)

func (r Role) valid() bool {
	switch r {
	case RoleWebhook, RoleWorker, RoleForceDelete, RoleReconciler, RoleMetadata, RoleListener:
		return true
	}
	return false
}

// usesWebhookSecret: only intake verifies signatures.
func (r Role) usesWebhookSecret() bool { return r == RoleWebhook }

// usesGitHub: every function but intake and metadata registers or removes
// runners; the listener mints the scale sets' registration tokens.
func (r Role) usesGitHub() bool { return r != RoleWebhook && r != RoleMetadata }

// recoversWorkers: the functions whose engine may find an instance a worker
// left in creating, and must know how long a worker can live.
func (r Role) recoversWorkers() bool { return r == RoleWorker || r == RoleReconciler }

// Environment variables template.yaml sets (infra/template_test.go checks
// that each function gets the ones it needs).
const (
	EnvTable            = "RUNFLEET_TABLE"
	EnvQueueURL         = "RUNFLEET_QUEUE_URL"
	EnvConfigParameter  = "RUNFLEET_CONFIG_PARAMETER"
	EnvWebhookSecretARN = "RUNFLEET_WEBHOOK_SECRET_ARN"
	EnvGitHubSecretARN  = "RUNFLEET_GITHUB_SECRET_ARN"
	// EnvGitHubExtraSecretARNs lists, comma-separated, the secrets holding
	// the private keys of github.extra_apps, in order: a config names the
	// n-th as private_key_env: RUNFLEET_GITHUB_EXTRA_APP_KEY_<n> (from 1).
	EnvGitHubExtraSecretARNs = "RUNFLEET_GITHUB_EXTRA_SECRET_ARNS"
	EnvLogLevel              = "LOG_LEVEL"
	// EnvInstanceTokenKeyARN names the Secrets Manager secret holding the
	// instance token key: the metadata function verifies tokens with it,
	// the worker mints them.
	EnvInstanceTokenKeyARN = "RUNFLEET_INSTANCE_TOKEN_KEY_ARN"
	// EnvMetadataURL is the metadata function's URL, given to the worker so
	// providers can tell machines where to call. With it and the key the
	// worker turns runner bootstrap on.
	EnvMetadataURL = "RUNFLEET_METADATA_URL"
	// EnvWorkerTimeout is the worker function's timeout (a Go duration,
	// "300s"): no worker outlives it, so an instance still creating after it
	// has lost its worker (engine.Options.CreatingTimeout). A function
	// cannot read another's timeout, so the template passes it.
	EnvWorkerTimeout = "RUNFLEET_WORKER_TIMEOUT"
	// EnvControllerID is the stack's ControllerId parameter: the alarms and
	// the dashboard read the functions' metrics under it, so a config whose
	// controller_id differs is refused at start (Load) rather than leaving
	// every alarm blind. Optional: unset, nothing is compared.
	EnvControllerID = "RUNFLEET_CONTROLLER_ID"
	// EnvCacheTable and EnvCacheBucket are the actions/cache index table and
	// bucket (template.yaml, CacheBucketMaxAgeDays > 0): with both, and the
	// config's cache section, the metadata function serves the cache
	// (metadata_cache.go).
	EnvCacheTable  = "RUNFLEET_CACHE_TABLE"
	EnvCacheBucket = "RUNFLEET_CACHE_BUCKET"
)

// Env is what a function reads from its environment. Secrets are never in
// it: only the ARNs of the Secrets Manager secrets that hold them.
type Env struct {
	Table            string
	QueueURL         string
	ConfigParameter  string
	WebhookSecretARN string
	GitHubSecretARN  string
	// GitHubExtraSecretARNs hold the extra Apps' private keys, in order.
	GitHubExtraSecretARNs []string
	LogLevel              slog.Level

	InstanceTokenKeyARN string
	MetadataURL         string
	// WorkerTimeout is set for the worker and the reconciler.
	WorkerTimeout time.Duration
	// ControllerID, when set, is the controller_id the config must have.
	ControllerID string
	// CacheTable and CacheBucket are the metadata function's actions/cache
	// index and bucket; empty: the stack has none.
	CacheTable, CacheBucket string
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

		GitHubExtraSecretARNs: splitList(get(EnvGitHubExtraSecretARNs)),

		InstanceTokenKeyARN: get(EnvInstanceTokenKeyARN),
		MetadataURL:         get(EnvMetadataURL),
		ControllerID:        get(EnvControllerID),
		CacheTable:          get(EnvCacheTable),
		CacheBucket:         get(EnvCacheBucket),
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
	switch {
	case role == RoleMetadata && env.InstanceTokenKeyARN == "":
		problems = append(problems, fmt.Errorf("%s is not set (the metadata function verifies instance tokens with it)", EnvInstanceTokenKeyARN))
	case role == RoleWorker && (env.MetadataURL == "") != (env.InstanceTokenKeyARN == ""):
		problems = append(problems, fmt.Errorf("set both %s and %s (runner bootstrap) or neither", EnvMetadataURL, EnvInstanceTokenKeyARN))
	}
	if role.recoversWorkers() {
		timeout, err := parseWorkerTimeout(get(EnvWorkerTimeout))
		problems = append(problems, err)
		env.WorkerTimeout = timeout
	}
	if env.MetadataURL != "" {
		if u, err := url.Parse(env.MetadataURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			problems = append(problems, fmt.Errorf("%s %q is not an absolute URL", EnvMetadataURL, env.MetadataURL))
		}
	}
	level, err := telemetry.ParseLevel(get(EnvLogLevel))
	if err != nil {
		problems = append(problems, fmt.Errorf("%s: %w", EnvLogLevel, err))
	}
	env.LogLevel = level
	var set []error
	for _, p := range problems {
		if p != nil {
			set = append(set, p)
		}
	}
	if len(set) > 0 {
		return Env{}, &EnvError{Role: role, Problems: set}
	}
	return env, nil
}

// EnvError is an environment a function cannot run with: every missing or
// invalid variable, named. Nothing but a redeploy changes a function's
// environment, so Start reports it as the runtime's init error
// (InitErrorType) instead of failing each invocation.
type EnvError struct {
	Role     Role
	Problems []error
}

func (e *EnvError) Error() string {
	return fmt.Sprintf("lambdafn: %s function environment is incomplete: %v", e.Role, errors.Join(e.Problems...))
}

func (e *EnvError) Unwrap() []error { return e.Problems }

// parseWorkerTimeout reads EnvWorkerTimeout. It is required: without it the
// reconciler would wait a pool's whole bootstrap timeout before recovering
// an instance whose worker timed out minutes earlier.
func parseWorkerTimeout(v string) (time.Duration, error) {
	if v == "" {
		return 0, fmt.Errorf("%s is not set (the worker function's timeout, e.g. 300s)", EnvWorkerTimeout)
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s %q is not a positive duration such as 300s", EnvWorkerTimeout, v)
	}
	return d, nil
}

// splitList reads a comma-separated list, without empty items (SAM joins
// an empty CommaDelimitedList parameter into "").
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
