package lambdafn_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/testenv"
)

// The extra Apps' keys come from the secrets GitHubExtraAppSecretArns
// lists, in order, for the functions that call GitHub only.
func TestExtraAppKeysComeFromTheirSecrets(t *testing.T) {
	s := newStack(t, stackOptions{})
	ctx := context.Background()
	key := func(n string) string {
		return "-----BEGIN RSA PRIVATE KEY-----\n" + n + "\n-----END RSA PRIVATE KEY-----\n"
	}
	main, one, two := s.putSecret(t, key("AAAA")), s.putSecret(t, key("BBBB")), s.putSecret(t, key("CCCC"))
	param := "/" + testenv.UniqueName(t, "apps") + "/config"
	s.putParameter(t, param, strings.Replace(testConfig, "  simulated: true\n",
		"  app: {id: 1, private_key_env: RUNFLEET_GITHUB_PRIVATE_KEY}\n"+
			"  extra_apps:\n    - {id: 2, private_key_env: RUNFLEET_GITHUB_EXTRA_APP_KEY_1}\n    - {id: 3, private_key_env: RUNFLEET_GITHUB_EXTRA_APP_KEY_2}\n", 1))
	t.Setenv(lambdafn.EnvConfigParameter, param)
	t.Setenv(lambdafn.EnvGitHubSecretARN, main)
	t.Setenv(lambdafn.EnvGitHubExtraSecretARNs, one+", "+two)

	for _, role := range []lambdafn.Role{lambdafn.RoleWorker, lambdafn.RoleWebhook} {
		opts, err := s.options(role)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := lambdafn.LoadConfig(ctx, role, opts.Env, ssm.NewFromConfig(s.aws), secretsmanager.NewFromConfig(s.aws))
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		extra := cfg.GitHub.ExtraApps
		if len(extra) != 2 {
			t.Fatalf("%s: extra apps %v", role, extra)
		}
		got := string(extra[0].PrivateKey) + string(extra[1].PrivateKey)
		switch role {
		case lambdafn.RoleWorker:
			if got != key("BBBB")+key("CCCC") {
				t.Fatalf("worker's extra App keys %q; want the two secrets in order", got)
			}
		default:
			if got != "" {
				t.Fatalf("%s holds extra App keys it does not use", role)
			}
		}
	}

	// A config naming a third key with two secrets listed says where the
	// names come from.
	s.putParameter(t, param, strings.Replace(testConfig, "  simulated: true\n",
		"  app: {id: 1, private_key_env: RUNFLEET_GITHUB_PRIVATE_KEY}\n  extra_apps:\n    - {id: 4, private_key_env: RUNFLEET_GITHUB_EXTRA_APP_KEY_3}\n", 1))
	opts, _ := s.options(lambdafn.RoleWorker)
	_, err := lambdafn.LoadConfig(ctx, lambdafn.RoleWorker, opts.Env, ssm.NewFromConfig(s.aws), secretsmanager.NewFromConfig(s.aws))
	if err == nil || !strings.Contains(err.Error(), "RUNFLEET_GITHUB_EXTRA_APP_KEY_3") || !strings.Contains(err.Error(), lambdafn.EnvGitHubExtraSecretARNs) {
		t.Fatalf("a key beyond the listed secrets: %v", err)
	}
}
