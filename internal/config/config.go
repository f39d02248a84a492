// Package config is runfleet's one configuration format, used unchanged by
// embedded mode (a file) and by the Lambda functions (an SSM parameter).
// Load validates everything up front and names the offending field.
package config

import (
	"strings"
	"time"
)

// Config is the whole configuration file.
type Config struct {
	// ControllerID identifies this runfleet installation; it goes into the
	// names and tags of everything runfleet creates.
	ControllerID string  `yaml:"controller_id"`
	GitHub       GitHub  `yaml:"github"`
	Webhook      Webhook `yaml:"webhook"`
	Server       Server  `yaml:"server"`
	Store        Store   `yaml:"store"`
	Engine       Engine  `yaml:"engine"`
	// Metadata tunes what runner machines are served while they boot.
	Metadata Metadata `yaml:"metadata"`
	// Cache is runfleet's own actions/cache service (cache.go).
	Cache Cache  `yaml:"cache"`
	Pools []Pool `yaml:"pools"`
	// Prices are machine prices in USD per hour, by instance type and
	// market; they win over a provider's own (cost.go).
	Prices []Price `yaml:"prices"`
}

// GitHub says how runfleet talks to GitHub.
type GitHub struct {
	// Simulated replaces GitHub with an in-process simulation (demos and
	// tests only; logged loudly at start).
	Simulated bool   `yaml:"simulated"`
	BaseURL   string `yaml:"base_url"` // GHES API root; empty = api.github.com
	App       *App   `yaml:"app"`
	// ExtraApps lend their API budget: GitHub limits each App installation
	// to about 900 points a minute (180 JIT runners), so each App installed
	// on the same owners adds that much. They need the same permissions as
	// App and need no webhook: runfleet receives App's events only.
	ExtraApps []App `yaml:"extra_apps"`
	// TokenFile / TokenEnv: a personal access token, instead of an App.
	TokenFile string `yaml:"token_file"`
	TokenEnv  string `yaml:"token_env"`
	// Token is resolved from TokenFile/TokenEnv at load; never in YAML.
	Token string `yaml:"-" json:"-"`
	// Hooks are organization or repository webhooks that send runfleet
	// its workflow_job events, instead of or beside the App's. GitHub
	// never resends a failed delivery by itself; each reconcile pass reads
	// these webhooks' delivery logs (as it reads the App's) and recovers
	// what failed. With a token this is the only way to recover a lost
	// delivery; the token needs admin:org_hook (admin:repo_hook for a
	// repository's webhook).
	Hooks []Hook `yaml:"hooks"`
	// Budget paces the calls made with each credential (each App
	// installation, the App itself, or the token) under GitHub's secondary
	// limits; see docs/github-budget.md.
	Budget GitHubBudget `yaml:"budget"`
}

// GitHubBudget limits one credential's calls. Zero means the default.
type GitHubBudget struct {
	// PointsPerMinute bounds the points spent in any 60 s window (a GET
	// costs 1, a POST/PATCH/PUT/DELETE 5). Default 810, 90% of GitHub's
	// 900; at most 900.
	PointsPerMinute int `yaml:"points_per_minute"`
	// MaxInFlight caps requests in flight per process. Default 10; at most
	// GitHub's 100.
	MaxInFlight int `yaml:"max_in_flight"`
}

// Hook is an organization's or repository's webhook, by the id in its
// settings URL (…/settings/hooks/<id>).
type Hook struct {
	Owner string `yaml:"owner"` // "org" or "org/repo"
	ID    int64  `yaml:"id"`
}

// App is GitHub App authentication.
type App struct {
	ID             int64  `yaml:"id"`
	InstallationID int64  `yaml:"installation_id"`
	PrivateKeyFile string `yaml:"private_key_file"`
	PrivateKeyEnv  string `yaml:"private_key_env"`
	// PrivateKey (PEM) is resolved from PrivateKeyFile/PrivateKeyEnv at
	// load; never in YAML.
	PrivateKey []byte `yaml:"-" json:"-"`
}

// Webhook configures intake.
type Webhook struct {
	SecretFile string `yaml:"secret_file"`
	SecretEnv  string `yaml:"secret_env"`
	// Secret is resolved from SecretFile/SecretEnv at load; never in YAML.
	Secret []byte `yaml:"-" json:"-"`
	// MaxBodyBytes caps request bodies (default 1 MiB; GitHub caps payloads at 25 MB but
	// workflow_job payloads are a few KB).
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
}

// APITokenKeys names the keys that give the operator API (and the status
// page) its token, for the messages that tell a reader where the token
// comes from: there is no server.api_token key, only these two.
const APITokenKeys = "server.api_token_env or server.api_token_file"

// Server is embedded mode's HTTP server.
type Server struct {
	Listen string `yaml:"listen"` // default 127.0.0.1:8080
	// PublicURL is how runner machines reach the metadata endpoints
	// (<public_url>/metadata/… and /callbacks/…). Setting it turns runner
	// bootstrap on: instance tokens and stored JIT credentials.
	PublicURL string `yaml:"public_url"`
	// APITokenFile / APITokenEnv: the bearer token of the operator API. It
	// is optional: with neither set the operator API is disabled (its routes
	// answer 404), so a config without one can never expose an unauthenticated
	// force delete.
	APITokenFile string `yaml:"api_token_file"`
	APITokenEnv  string `yaml:"api_token_env"`
	// APIToken is resolved at load; never in YAML. Empty = API disabled.
	APIToken string `yaml:"-" json:"-"`
	// InstanceTokenKeyFile / InstanceTokenKeyEnv: the HMAC key (at least
	// 32 bytes) that signs the instance tokens runner machines present to
	// the metadata endpoints, which PublicURL turns on. Optional: without
	// one, `runfleet serve` generates a key once and keeps it in store.dir,
	// so tokens survive restarts. (On Lambda the key comes from the stack's
	// Secrets Manager secret instead; see docs/runner-bootstrap.md.)
	InstanceTokenKeyFile string `yaml:"instance_token_key_file"`
	InstanceTokenKeyEnv  string `yaml:"instance_token_key_env"`
	// InstanceTokenKey is resolved at load; never in YAML.
	InstanceTokenKey []byte `yaml:"-" json:"-"`
	// MetricsAddress, when set, serves GET /metrics on its own listener
	// (host:port) instead of beside the webhook on Listen: a scraper then
	// needs no route to the intake, and the intake's port exposes no
	// fleet figures.
	MetricsAddress string `yaml:"metrics_address"`
	// MetricsTokenFile / MetricsTokenEnv: an optional bearer token GET
	// /metrics requires (Prometheus' authorization.credentials). Without
	// one /metrics is open to whoever reaches its address.
	MetricsTokenFile string `yaml:"metrics_token_file"`
	MetricsTokenEnv  string `yaml:"metrics_token_env"`
	// MetricsToken is resolved at load; never in YAML.
	MetricsToken string `yaml:"-" json:"-"`
}

// Metadata tunes the runner bootstrap endpoints (both modes).
type Metadata struct {
	// RunnerVersion is the actions/runner release runfleet's install
	// script downloads when a machine's image has none (default: the
	// metadata package's DefaultRunnerVersion).
	RunnerVersion string `yaml:"runner_version"`
	// CACertBundle is PEM text of extra root certificates machines should
	// trust (served at system/cert-bundle); not a secret.
	CACertBundle string `yaml:"ca_cert_bundle"`
}

// Store chooses where `runfleet serve` keeps its state: the records and
// the work queue, which follows the store (store.go). The Lambda functions
// ignore it: their state is the stack's DynamoDB table and SQS queue.
type Store struct {
	// Kind is the store's backend, one of StoreKinds; default bolt.
	Kind string `yaml:"kind"`
	// Dir (bolt) holds the store's file, state.db, with the queue inside
	// it, and the instance token key serve generates when the config
	// names none. Default ./runfleet-data.
	Dir string `yaml:"dir"`
	// DSNFile / DSNEnv (postgres): the file or environment variable
	// holding the database's DSN, e.g.
	// postgres://runfleet:PASSWORD@db:5432/runfleet. It carries the
	// password, so it is never in the YAML, and serve logs only its host
	// and database.
	DSNFile string `yaml:"dsn_file"`
	DSNEnv  string `yaml:"dsn_env"`
	// DSN is resolved at load; never in YAML.
	DSN string `yaml:"-" json:"-"`
}

// Engine tunes the lifecycle engine.
type Engine struct {
	Workers           int           `yaml:"workers"`            // default 8
	ReconcileInterval time.Duration `yaml:"reconcile_interval"` // default 30s
	DeleteBackoffMin  time.Duration `yaml:"delete_backoff_min"` // default 1s
	DeleteBackoffMax  time.Duration `yaml:"delete_backoff_max"` // default 5m
	MaxReceives       int           `yaml:"max_receives"`       // dead-letter after; default 10
	VisibilityTimeout time.Duration `yaml:"visibility_timeout"` // default 5m
	// TakeoverGrace: how long past its bound unfinished work waits before
	// the reconciler takes it over (serve only; the Lambda functions keep
	// the engine's default).
	TakeoverGrace time.Duration `yaml:"takeover_grace"` // default 1m
}

// Pool is a set of identical runners serving jobs whose labels it covers.
type Pool struct {
	Name string `yaml:"name"`
	// Owner: "org", "org/repo" or "enterprise:slug".
	Owner string `yaml:"owner"`
	// Labels the pool's runners carry; a job matches when every one of its
	// labels is among them (case-insensitive; "self-hosted" is implied).
	Labels      []string `yaml:"labels"`
	MinIdle     int      `yaml:"min_idle"`
	MaxRunners  int      `yaml:"max_runners"`
	RunnerGroup string   `yaml:"runner_group"`
	// BootstrapTimeout bounds a create call and how long a runner may take
	// to come online (default 20m, GARM's).
	BootstrapTimeout time.Duration `yaml:"bootstrap_timeout"`
	// ProviderTimeout bounds every provider call but create (delete, list);
	// default 5m.
	ProviderTimeout time.Duration `yaml:"provider_timeout"`
	Provider        Provider      `yaml:"provider"`
	// Shapes lets the pool's jobs ask for a machine shape with
	// runfleet/… labels, within these limits; absent = no shapes.
	Shapes *Shapes `yaml:"shapes"`
	// SpotBreaker turns spot off for the pool after repeated spot
	// interruptions (docs/providers-ec2.md#spot-interruption).
	SpotBreaker SpotBreaker `yaml:"spot_breaker"`
	// ScaleSet feeds the pool from a runner scale set instead of webhooks
	// (scaleset.go); absent = webhooks.
	ScaleSet *ScaleSet `yaml:"scale_set"`
	// Cost prices the pool's machines and sets its monthly budget.
	Cost PoolCost `yaml:"cost"`
	// Warm sizes the pool's warm machines from its job ledger (warm.go);
	// absent = min_idle and warm_pool.size alone.
	Warm *Warm `yaml:"warm"`
}

// SpotBreaker: after Interruptions spot interruptions within Window, the
// pool's machines are on-demand only for Cooldown. Zero means the default
// (2, 15m, 30m).
type SpotBreaker struct {
	Interruptions int           `yaml:"interruptions"`
	Window        time.Duration `yaml:"window"`
	Cooldown      time.Duration `yaml:"cooldown"`
}

// Provider selects and configures a provider for a pool.
type Provider struct {
	Type string `yaml:"type"` // simulated, external, ec2, kubernetes
	// Settings are the provider type's own options, decoded by it.
	Settings map[string]any `yaml:"settings"`
}

// Pool returns the configured pool by name (case-insensitive, as names are
// validated lower-case).
func (c *Config) Pool(name string) (*Pool, bool) {
	for i := range c.Pools {
		if strings.EqualFold(c.Pools[i].Name, name) {
			return &c.Pools[i], true
		}
	}
	return nil, false
}
