package config_test

import (
	"testing"

	"github.com/runfleet/runfleet/internal/config"
)

func TestPoolMatchesLabels(t *testing.T) {
	pool := config.Pool{Labels: []string{"Linux", "x64", "gpu"}}
	cases := []struct {
		job  []string
		want bool
	}{
		{[]string{"self-hosted", "linux", "x64"}, true},
		{[]string{"SELF-HOSTED", "LINUX"}, true},
		{[]string{"self-hosted"}, true},
		{[]string{"linux"}, true},
		{[]string{"linux", "x64", "gpu"}, true},
		{[]string{"linux", "arm64"}, false},
		{[]string{"ubuntu-latest"}, false},
		{[]string{"self-hosted", "linux", "x64", "gpu", "big"}, false},
		{nil, false},
		{[]string{}, false},
	}
	for _, c := range cases {
		if got := pool.Matches(c.job); got != c.want {
			t.Errorf("Matches(%q) = %t, want %t", c.job, got, c.want)
		}
	}
}

func TestMatchPool(t *testing.T) {
	cfg := &config.Config{Pools: []config.Pool{
		{Name: "repo-gpu", Owner: "octo-org/ML", Labels: []string{"linux", "gpu"}},
		{Name: "org-linux", Owner: "Octo-Org", Labels: []string{"linux", "x64"}},
		{Name: "org-linux-wide", Owner: "octo-org", Labels: []string{"linux", "x64", "arm64"}},
		{Name: "enterprise", Owner: "enterprise:Acme", Labels: []string{"linux", "windows"}},
		{Name: "broken-owner", Owner: "a/b/c", Labels: []string{"linux", "solaris"}},
	}}
	cases := []struct {
		name                  string
		repo, org, enterprise string
		labels                []string
		want                  string // "" = no pool
	}{
		{"repo pool first", "octo-org/ml", "octo-org", "", []string{"self-hosted", "linux"}, "repo-gpu"},
		{"repo pool needs its labels", "octo-org/ml", "octo-org", "", []string{"linux", "x64"}, "org-linux"},
		{"org pool for other repos", "octo-org/web", "octo-org", "", []string{"linux", "gpu"}, ""},
		{"org pool case-insensitive", "OCTO-ORG/web", "OCTO-ORG", "", []string{"self-hosted", "Linux", "X64"}, "org-linux"},
		{"first match wins, later pool covers the rest", "octo-org/web", "octo-org", "", []string{"arm64"}, "org-linux-wide"},
		{"other org", "other/web", "other", "", []string{"linux"}, ""},
		{"repo pool not for another org's same repo name", "other/ml", "other", "", []string{"gpu"}, ""},
		{"org pool needs the org login", "octo-org/web", "", "", []string{"linux"}, ""},
		{"enterprise pool", "other/web", "other", "acme", []string{"windows"}, "enterprise"},
		{"enterprise after org pools", "octo-org/web", "octo-org", "acme", []string{"linux"}, "org-linux"},
		{"enterprise needs slug", "other/web", "other", "", []string{"windows"}, ""},
		{"invalid owner never matches", "a/b", "a", "", []string{"solaris"}, ""},
		{"no labels", "octo-org/web", "octo-org", "", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, ok := cfg.MatchPool(c.repo, c.org, c.enterprise, c.labels)
			got := ""
			if ok {
				got = p.Name
			}
			if got != c.want {
				t.Errorf("MatchPool = %q, want %q", got, c.want)
			}
			if ok && p != &cfg.Pools[indexOf(cfg, p.Name)] {
				t.Error("MatchPool returned a copy, not the configured pool")
			}
		})
	}
}

func TestConfigPool(t *testing.T) {
	cfg := &config.Config{Pools: []config.Pool{{Name: "a"}, {Name: "linux-x64"}}}
	p, ok := cfg.Pool("Linux-X64")
	if !ok || p != &cfg.Pools[1] {
		t.Errorf("Pool(Linux-X64) = %v, %t", p, ok)
	}
	if _, ok := cfg.Pool("missing"); ok {
		t.Error("found a missing pool")
	}
}

func indexOf(cfg *config.Config, name string) int {
	for i := range cfg.Pools {
		if cfg.Pools[i].Name == name {
			return i
		}
	}
	return -1
}
