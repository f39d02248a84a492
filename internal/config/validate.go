package config

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/runner"
)

// maxLabels is GitHub's limit on a JIT runner's labels.
const maxLabels = 100

// maxWebhookBody is the largest payload GitHub sends; a larger limit only
// lets an attacker make runfleet buffer more.
const maxWebhookBody = 25 << 20

var (
	// controllerIDPattern keeps the controller ID usable in machine names and
	// cloud tags everywhere (lower case, no dots or underscores); 64 fits a
	// GARM-style UUID.
	controllerIDPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$`)
	// poolNamePattern makes a pool name usable unchanged inside runner and
	// machine names (runner.InstanceName) and as GARM_POOL_ID.
	poolNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$`)
)

// validate reports every structural problem; secrets are checked by
// resolveSecrets.
func (c *Config) validate() problems {
	var p problems
	switch {
	case c.ControllerID == "":
		p.add("controller_id", "required (it names and tags everything runfleet creates)")
	case !controllerIDPattern.MatchString(c.ControllerID):
		p.add("controller_id", "%q: must be 1–64 lower-case letters, digits or '-', not starting or ending with '-'", c.ControllerID)
	}
	c.GitHub.validate(&p)
	c.Webhook.validate(&p)
	c.Server.validate(&p)
	c.Store.validate(&p)
	c.validateSharedStore(&p)
	c.Engine.validate(&p)
	c.Metadata.validate(&p)
	c.Cache.validate(&p, &c.Server, c.Pools)
	c.validatePools(&p)
	c.validatePrices(&p)
	return p
}

func (g *GitHub) validate(p *problems) {
	token := g.TokenFile != "" || g.TokenEnv != ""
	chosen := 0
	for _, set := range []bool{g.Simulated, g.App != nil, token} {
		if set {
			chosen++
		}
	}
	if chosen != 1 {
		p.add("github", "set exactly one of simulated: true, app, or token_file/token_env")
	}
	if g.TokenFile != "" && g.TokenEnv != "" {
		p.add("github", "set only one of token_file and token_env")
	}
	if g.BaseURL != "" {
		checkHTTPURL(p, "github.base_url", g.BaseURL)
	}
	// GitHub's secondary limits: 900 points a minute, 100 requests in
	// flight; a budget above them would be refused by GitHub.
	if b := g.Budget.PointsPerMinute; b < 0 || b > 900 {
		p.add("github.budget.points_per_minute", "must be 1–900 (GitHub refuses more than 900 points a minute); 0 means the default, 810")
	}
	if b := g.Budget.MaxInFlight; b < 0 || b > 100 {
		p.add("github.budget.max_in_flight", "must be 1–100 (GitHub refuses more than 100 concurrent requests); 0 means the default, 10")
	}
	if g.App != nil {
		g.App.validate(p, "github.app", "0 = the installation that sent each webhook")
	}
	if len(g.ExtraApps) > 0 && g.App == nil {
		p.add("github.extra_apps", "extra Apps lend their budget to github.app: set app too (a token has one budget)")
	}
	seen := map[int64]string{}
	if g.App != nil {
		seen[g.App.ID] = "github.app"
	}
	for i := range g.ExtraApps {
		field := fmt.Sprintf("github.extra_apps[%d]", i)
		a := &g.ExtraApps[i]
		a.validate(p, field, "0 = the installation found for each owner")
		if first, dup := seen[a.ID]; dup && a.ID > 0 {
			p.add(field+".id", "App %d is already %s: each App adds its own budget once", a.ID, first)
		}
		seen[a.ID] = field
	}
	g.validateHooks(p)
}

// validateHooks checks each webhook names an owner and an id, once.
func (g *GitHub) validateHooks(p *problems) {
	if len(g.Hooks) > 0 && g.Simulated {
		p.add("github.hooks", "the simulated GitHub has no webhooks to read; remove hooks or simulated")
	}
	seen := map[string]string{}
	for i, h := range g.Hooks {
		field := fmt.Sprintf("github.hooks[%d]", i)
		hook, err := github.ParseHook(h.Owner, h.ID)
		if err != nil {
			p.add(field, "%v", err)
			continue
		}
		if first, dup := seen[hook.String()]; dup {
			p.add(field, "webhook %s is already %s", hook, first)
		}
		seen[hook.String()] = field
	}
}

func (a *App) validate(p *problems, field, installationHint string) {
	if a.ID <= 0 {
		p.add(field+".id", "must be > 0 (the App's numeric id)")
	}
	if a.InstallationID < 0 {
		p.add(field+".installation_id", "must be ≥ 0 (%s)", installationHint)
	}
	switch {
	case a.PrivateKeyFile == "" && a.PrivateKeyEnv == "":
		p.add(field, "set private_key_file or private_key_env")
	case a.PrivateKeyFile != "" && a.PrivateKeyEnv != "":
		p.add(field, "set only one of private_key_file and private_key_env")
	}
}

func (w *Webhook) validate(p *problems) {
	switch {
	case w.SecretFile == "" && w.SecretEnv == "":
		p.add("webhook", "a secret is required: set secret_file or secret_env")
	case w.SecretFile != "" && w.SecretEnv != "":
		p.add("webhook", "set only one of secret_file and secret_env")
	}
	switch {
	case w.MaxBodyBytes < 0:
		p.add("webhook.max_body_bytes", "must be > 0")
	case w.MaxBodyBytes > maxWebhookBody:
		p.add("webhook.max_body_bytes", "must be ≤ %d (GitHub never sends more)", maxWebhookBody)
	}
}

func (s *Server) validate(p *problems) {
	if _, _, err := net.SplitHostPort(s.Listen); err != nil {
		p.add("server.listen", "%q: must be host:port (e.g. 127.0.0.1:8080)", s.Listen)
	}
	if s.PublicURL != "" {
		checkHTTPURL(p, "server.public_url", s.PublicURL)
	}
	if s.APITokenFile != "" && s.APITokenEnv != "" {
		p.add("server", "set only one of api_token_file and api_token_env")
	}
	if s.InstanceTokenKeyFile != "" && s.InstanceTokenKeyEnv != "" {
		p.add("server", "set only one of instance_token_key_file and instance_token_key_env")
	}
	if s.MetricsAddress != "" {
		if _, _, err := net.SplitHostPort(s.MetricsAddress); err != nil {
			p.add("server.metrics_address", "%q: must be host:port (e.g. 127.0.0.1:9090)", s.MetricsAddress)
		} else if s.MetricsAddress == s.Listen {
			p.add("server.metrics_address", "%q is server.listen already; leave metrics_address empty to serve /metrics there", s.MetricsAddress)
		}
	}
	if s.MetricsTokenFile != "" && s.MetricsTokenEnv != "" {
		p.add("server", "set only one of metrics_token_file and metrics_token_env")
	}
}

// runnerVersionPattern is an actions/runner release number.
var runnerVersionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

func (m *Metadata) validate(p *problems) {
	if m.RunnerVersion != "" && !runnerVersionPattern.MatchString(m.RunnerVersion) {
		p.add("metadata.runner_version", "%q: want a release number such as 2.328.0", m.RunnerVersion)
	}
	if strings.TrimSpace(m.CACertBundle) == "" {
		return
	}
	rest := []byte(m.CACertBundle)
	certs := 0
	for {
		block, more := pem.Decode(rest)
		if block == nil {
			break
		}
		rest = more
		if block.Type != "CERTIFICATE" {
			p.add("metadata.ca_cert_bundle", "holds a %q PEM block; only certificates belong there", block.Type)
			return
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			p.add("metadata.ca_cert_bundle", "certificate %d does not parse: %v", certs+1, err)
			return
		}
		certs++
	}
	if certs == 0 {
		p.add("metadata.ca_cert_bundle", "holds no PEM certificate")
	}
}

func (e *Engine) validate(p *problems) {
	if e.Workers < 0 {
		p.add("engine.workers", "must be ≥ 1")
	}
	if e.MaxReceives < 0 {
		p.add("engine.max_receives", "must be ≥ 1")
	}
	for _, d := range []struct {
		field string
		value int64
	}{
		{"engine.reconcile_interval", int64(e.ReconcileInterval)},
		{"engine.delete_backoff_min", int64(e.DeleteBackoffMin)},
		{"engine.delete_backoff_max", int64(e.DeleteBackoffMax)},
		{"engine.visibility_timeout", int64(e.VisibilityTimeout)},
		{"engine.takeover_grace", int64(e.TakeoverGrace)},
	} {
		if d.value < 0 {
			p.add(d.field, "must be > 0")
		}
	}
	if e.DeleteBackoffMin > 0 && e.DeleteBackoffMax > 0 && e.DeleteBackoffMin > e.DeleteBackoffMax {
		p.add("engine.delete_backoff_min", "must be ≤ delete_backoff_max (%s)", e.DeleteBackoffMax)
	}
}

func (c *Config) validatePools(p *problems) {
	if len(c.Pools) == 0 {
		p.add("pools", "at least one pool is required")
	}
	firstIndex := make(map[string]int, len(c.Pools))
	for i := range c.Pools {
		pool := &c.Pools[i]
		switch {
		case pool.Name == "":
			p.add(poolField(i, "name"), "required")
		case !poolNamePattern.MatchString(pool.Name):
			p.add(poolField(i, "name"), "%q: must be 1–64 lower-case letters, digits or '-', not starting or ending with '-'", pool.Name)
		}
		if pool.Name != "" {
			key := strings.ToLower(pool.Name)
			if first, dup := firstIndex[key]; dup {
				p.add(poolField(i, "name"), "%q is already the name of pools[%d]", pool.Name, first)
			} else {
				firstIndex[key] = i
			}
		}
		c.checkScaleSetUnique(p, i)
		if pool.Owner == "" {
			p.add(poolField(i, "owner"), `required: "org", "org/repo" or "enterprise:slug"`)
		} else if _, err := github.ParseOwner(pool.Owner); err != nil {
			p.add(poolField(i, "owner"), "%v", err)
		}
		pool.validateLabels(p, i)
		pool.ScaleSet.validate(p, i, pool)
		pool.Shapes.validate(p, i, pool.Provider.Type)
		pool.Warm.validate(p, i, pool)
		if pool.MaxRunners < 1 {
			p.add(poolField(i, "max_runners"), "must be ≥ 1")
		}
		switch {
		case pool.MinIdle < 0:
			p.add(poolField(i, "min_idle"), "must be ≥ 0")
		case pool.MaxRunners >= 1 && pool.MinIdle > pool.MaxRunners:
			p.add(poolField(i, "min_idle"), "must be ≤ max_runners (%d)", pool.MaxRunners)
		}
		if pool.BootstrapTimeout <= 0 {
			p.add(poolField(i, "bootstrap_timeout"), "must be > 0")
		}
		if pool.ProviderTimeout <= 0 {
			p.add(poolField(i, "provider_timeout"), "must be > 0")
		}
		if b := pool.SpotBreaker; b.Interruptions < 0 || b.Window < 0 || b.Cooldown < 0 {
			p.add(poolField(i, "spot_breaker"), "interruptions, window and cooldown must be ≥ 0 (0: the default)")
		}
		switch {
		case pool.Provider.Type == "":
			p.add(poolField(i, "provider.type"), "required (one of %s)", strings.Join(ProviderTypes, ", "))
		case !knownProviderType(pool.Provider.Type):
			p.add(poolField(i, "provider.type"), "unknown type %q (one of %s)", pool.Provider.Type, strings.Join(ProviderTypes, ", "))
		}
	}
}

func (pool *Pool) validateLabels(p *problems, i int) {
	if len(pool.Labels) == 0 {
		p.add(poolField(i, "labels"), "must not be empty")
		return
	}
	if len(pool.Labels) > maxLabels {
		p.add(poolField(i, "labels"), "has %d labels; GitHub allows at most %d", len(pool.Labels), maxLabels)
	}
	for j, l := range pool.Labels {
		field := fmt.Sprintf("%s[%d]", poolField(i, "labels"), j)
		switch {
		case strings.TrimSpace(l) == "":
			p.add(field, "must not be empty")
		case strings.TrimSpace(l) != l:
			p.add(field, "%q: must not start or end with whitespace", l)
		case strings.Contains(l, ","):
			// The runner's own config takes labels comma-separated.
			p.add(field, "%q: must not contain a comma", l)
		case runner.IsShapeLabel(l):
			p.add(field, "%q: labels starting with %q ask for machine shapes; a pool grants them with shapes:, it cannot carry them", l, runner.ShapeLabelPrefix)
		}
	}
}

func checkHTTPURL(p *problems, field, raw string) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.add(field, "%q: must be an absolute http:// or https:// URL", raw)
	}
}
