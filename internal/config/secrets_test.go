package config_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// testPEM is a syntactically valid PEM block; its content is not a real key.
const testPEM = "-----BEGIN RSA PRIVATE KEY-----\nTUlJQm9nSUJBQUpCQUxzaW11bGF0ZWQ=\n-----END RSA PRIVATE KEY-----\n"

func TestSecretTrimsOneTrailingNewline(t *testing.T) {
	cases := []struct{ raw, want string }{
		{"s3cret", "s3cret"},
		{"s3cret\n", "s3cret"},
		{"s3cret\r\n", "s3cret"},
		{"s3cret\n\n", "s3cret\n"},
		{" s3cret ", " s3cret "},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q", c.raw), func(t *testing.T) {
			fromFile := replace(t, "secret_env: HOOK_SECRET", "secret_file: /run/hook")
			e := defaultEnv()
			e.files["/run/hook"] = c.raw
			cfg, err := parse(t, fromFile, e)
			if err != nil {
				t.Fatal(err)
			}
			if string(cfg.Webhook.Secret) != c.want {
				t.Errorf("from file: got %q, want %q", cfg.Webhook.Secret, c.want)
			}

			e = defaultEnv()
			e.env["HOOK_SECRET"] = c.raw
			cfg, err = parse(t, validYAML, e)
			if err != nil {
				t.Fatal(err)
			}
			if string(cfg.Webhook.Secret) != c.want {
				t.Errorf("from env: got %q, want %q", cfg.Webhook.Secret, c.want)
			}
		})
	}
}

func TestResolvesTokenAppKeyAndAPIToken(t *testing.T) {
	e := defaultEnv()
	e.env["GH_TOKEN"] = "ghp_token\n"
	e.env["API_TOKEN"] = "op-token"
	e.files["/keys/app.pem"] = testPEM
	withToken := replace(t, "  simulated: true\n", "  token_env: GH_TOKEN\n") + "server:\n  api_token_env: API_TOKEN\n"
	cfg, err := parse(t, withToken, e)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GitHub.Token != "ghp_token" || cfg.Server.APIToken != "op-token" {
		t.Errorf("token %q, api token %q", cfg.GitHub.Token, cfg.Server.APIToken)
	}

	withApp := replace(t, "  simulated: true\n", "  app:\n    id: 42\n    installation_id: 7\n    private_key_file: /keys/app.pem\n")
	cfg, err = parse(t, withApp, e)
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg.GitHub.App.PrivateKey) != testPEM {
		t.Errorf("private key not kept byte for byte: %q", cfg.GitHub.App.PrivateKey)
	}

	e.files["/keys/app.pem"] = "not a key"
	_, err = parse(t, withApp, e)
	assertMessages(t, err, "github.app.private_key_file: not a PEM-encoded private key")
}

func TestSecretsNeverPrinted(t *testing.T) {
	const (
		hook         = "hook-VALUE-1"
		token        = "token-VALUE-2"
		api          = "api-VALUE-3"
		metricsToken = "metrics-VALUE-5"
		key          = "-----BEGIN RSA PRIVATE KEY-----\nS0VZLVZBTFVFLTQ=\n-----END RSA PRIVATE KEY-----\n"
	)
	e := defaultEnv()
	e.env["HOOK_SECRET"] = hook
	e.env["GH_TOKEN"] = token
	e.env["API_TOKEN"] = api
	e.env["APP_KEY"] = key
	e.env["METRICS_TOKEN"] = metricsToken
	yaml := replace(t, "  simulated: true\n", "  token_env: GH_TOKEN\n") + "server:\n  api_token_env: API_TOKEN\n  metrics_token_env: METRICS_TOKEN\n"
	cfg, err := parse(t, yaml, e)
	if err != nil {
		t.Fatal(err)
	}
	appYAML := replace(t, "  simulated: true\n", "  app:\n    id: 1\n    private_key_env: APP_KEY\n")
	appCfg, err := parse(t, appYAML, e)
	if err != nil {
		t.Fatal(err)
	}

	var logged bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logged, nil))
	log.Info("config", "config", cfg, "app", appCfg.GitHub, "webhook", cfg.Webhook, "server", cfg.Server)
	printed := fmt.Sprintf("%v %+v %v %+v %s", cfg, cfg, *cfg, appCfg, appCfg.GitHub)
	for _, out := range []string{logged.String(), printed} {
		// []byte secrets would appear base64-encoded in JSON.
		for _, secret := range []string{hook, token, api, metricsToken, "S0VZLVZBTFVFLTQ=", base64.StdEncoding.EncodeToString([]byte(hook))} {
			if strings.Contains(out, secret) {
				t.Errorf("secret %q printed in:\n%s", secret, out)
			}
		}
		assertContains(t, out, "[redacted]")
	}

	// An invalid config's errors name variables, never values.
	e.env["HOOK_SECRET"] = hook
	_, err = parse(t, yaml+"pools: []\n", e)
	if err == nil || strings.Contains(err.Error(), hook) || strings.Contains(err.Error(), api) {
		t.Errorf("error leaks a secret or is missing: %v", err)
	}
}
