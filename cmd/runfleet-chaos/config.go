package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/runfleet/runfleet/providers/external/externaltest"
)

// Environment variables carrying the run's secrets to runfleet, so they are
// in no file and on no command line.
const (
	secretEnv   = "RUNFLEET_CHAOS_WEBHOOK_SECRET"
	apiTokenEnv = "RUNFLEET_CHAOS_API_TOKEN"
)

// appKeyFile is the GitHub App's private key in the run's directory, as
// GitHub hands it out (PEM) and runfleet's config names it. The key is
// the run's own, generated for it and trusted only by its fake GitHub.
const appKeyFile = "github-app.pem"

// Engine timings of the served config: short, so everything runfleet
// retries or reconciles happens many times within the run.
const (
	deleteBackoffMin = 500 * time.Millisecond
	deleteBackoffMax = 10 * time.Second
	// visibilityTimeout must outlast the longest create (the bootstrap
	// timeout plus the delete after it fails), or a second worker would
	// receive a message the first still works on; it is also how long a
	// message received by a killed process waits before it is redelivered.
	visibilityTimeout = 45 * time.Second
)

// serveConfig is what differs between the configs the driver writes: one
// per server, or per replica.
type serveConfig struct {
	port      int    // server.listen, on loopback
	publicURL string // where machines call runfleet back
	githubURL string
	// appKey is how the GitHub App's private key is named: a file
	// (private_key_file) with one server; an environment variable
	// (private_key_env) for replicas, which share every secret through
	// their config.
	appKey string
	// extraApps is the github.extra_apps section ("" for none).
	extraApps string
	// store is the store section, as a YAML flow mapping.
	store string
	// serverExtra and engineExtra are settings only replicas
	// need, indented for their sections.
	serverExtra, engineExtra    string
	providerBin, providerConfig string
}

// writeServeConfig writes runfleet's config: the fake GitHub as a GitHub
// Enterprise Server reached as a GitHub App (so runfleet recovers lost
// deliveries from the App's delivery log), bootstrap on (public_url), one
// pool on the chaos provider.
func writeServeConfig(path string, s settings, c serveConfig) error {
	engine := fmt.Sprintf("  reconcile_interval: %s\n  delete_backoff_min: %s\n  delete_backoff_max: %s\n  visibility_timeout: %s\n%s",
		s.reconcile, deleteBackoffMin, deleteBackoffMax, visibilityTimeout, c.engineExtra)
	timeouts := fmt.Sprintf("    bootstrap_timeout: %s\n    provider_timeout: %s\n", bootstrapTimeout, providerTimeout)
	if s.defaults {
		// runfleet's own defaults for every engine timing (issue #32's
		// acceptance): nothing but the workers is set. The pool's
		// timeouts belong to its machine image, and the chaos's machines
		// boot in a second: the default bootstrap_timeout (20 min) would
		// leave a machine whose boot report a kill lost for 20 min.
		engine = ""
	}
	config := fmt.Sprintf(`# written by runfleet-chaos (seed %d)
controller_id: chaos
github:
  base_url: %s
  app:
    id: %d
    installation_id: %d
    %s
%swebhook: {secret_env: %s}
server:
  listen: 127.0.0.1:%d
  public_url: %s
  api_token_env: %s
%sstore: %s
engine:
  workers: %d
%spools:
  - name: %s
    owner: %s
    labels: [self-hosted, linux, x64]
%s    max_runners: %d
%s    provider:
      type: external
      settings:
        provider_executable: %q
        config_file: %q
        timeout: %s
`, s.seed, c.githubURL, chaosAppID, chaosInstallation, c.appKey, c.extraApps, secretEnv, c.port, c.publicURL, apiTokenEnv, c.serverExtra, c.store,
		s.workers, engine,
		chaosPool, chaosOrg, scaleSetYAML(s.intake), s.maxRunners, timeouts, c.providerBin, c.providerConfig, providerTimeout)
	return os.WriteFile(path, []byte(config), 0o600)
}

// extraAppsYAML is the github.extra_apps section naming each extra App's
// key as keyRef(i) says (i from 0) — a private_key_file or
// private_key_env entry.
func extraAppsYAML(n int, keyRef func(i int) string) string {
	if n == 0 {
		return ""
	}
	out := "  extra_apps:\n"
	for i := range n {
		out += fmt.Sprintf("    - {id: %d, %s}\n", chaosAppID+int64(i+1), keyRef(i))
	}
	return out
}

// cloudConfig is the provider's config in dir, faults as the flags say.
func cloudConfig(dir string, s settings) externaltest.Config {
	return externaltest.Config{
		StateFile:          filepath.Join(dir, "cloud-state.json"),
		EventLog:           filepath.Join(dir, "provider-events.jsonl"),
		Seed:               int64(s.seed),
		FailRate:           s.failRate,
		HangRate:           s.hangRate,
		HangFor:            2 * max(bootstrapTimeout, providerTimeout),
		IgnoreDeleteByName: s.ignoreByName,
		// Like most clouds (EC2 tags, say), names need not be unique: a
		// second create of one name makes a second machine, which the
		// driver then reports.
		AllowDuplicateNames: true,
	}
}

// scaleSetYAML is the pool's scale_set line with -intake scaleset, else
// nothing: the pool takes webhooks.
func scaleSetYAML(intake string) string {
	if intake != intakeScaleSet {
		return ""
	}
	return fmt.Sprintf("    scale_set: {name: %s}\n", chaosScaleSet)
}
