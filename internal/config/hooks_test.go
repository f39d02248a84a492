package config_test

import (
	"strings"
	"testing"
)

// github.hooks names the organization and repository webhooks whose
// delivery logs the reconciler reads (with a token, the only way to
// recover a lost delivery); each problem is named by its index.
func TestHooks(t *testing.T) {
	e := defaultEnv()
	e.env["GH_TOKEN"] = "ghp_x"
	const token = "  token_env: GH_TOKEN\n"
	cfg, err := parse(t, withApps(t, token+"  hooks:\n    - {owner: acme, id: 7}\n    - {owner: acme/app, id: 8}\n"), e)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.GitHub.Hooks) != 2 || cfg.GitHub.Hooks[1].Owner != "acme/app" || cfg.GitHub.Hooks[1].ID != 8 {
		t.Fatalf("hooks %+v", cfg.GitHub.Hooks)
	}
	for _, tc := range []struct {
		name, hooks, want string
	}{
		{"no id", token + "  hooks:\n    - {owner: acme}\n", "github.hooks[0]: webhook of acme: want its id"},
		{"no owner", token + "  hooks:\n    - {id: 7}\n", "github.hooks[0]: owner"},
		{"an enterprise", token + "  hooks:\n    - {owner: \"enterprise:big\", id: 7}\n", "github.hooks[0]: webhook of enterprise:big: GitHub has no delivery log API"},
		{"twice", token + "  hooks:\n    - {owner: acme, id: 7}\n    - {owner: acme, id: 7}\n", "github.hooks[1]: webhook orgs/acme/hooks/7 is already github.hooks[0]"},
		{"simulated", "  simulated: true\n  hooks:\n    - {owner: acme, id: 7}\n", "github.hooks: the simulated GitHub has no webhooks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, withApps(t, tc.hooks), e)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want %q", err, tc.want)
			}
		})
	}
}
