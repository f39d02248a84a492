package runner_test

import (
	"testing"

	"github.com/runfleet/runfleet/internal/runner"
)

func TestPoolMatchesLabels(t *testing.T) {
	pool := runner.Pool{Labels: []string{"Linux", "x64", "gpu"}}
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
	cfg := runner.Pools{
		{Name: "repo-gpu", Owner: runner.Owner{Org: "octo-org", Repo: "ML"}, Labels: []string{"linux", "gpu"}},
		{Name: "org-linux", Owner: runner.Owner{Org: "Octo-Org"}, Labels: []string{"linux", "x64"}},
		{Name: "org-linux-wide", Owner: runner.Owner{Org: "octo-org"}, Labels: []string{"linux", "x64", "arm64"}},
		{Name: "enterprise", Owner: runner.Owner{Enterprise: "Acme"}, Labels: []string{"linux", "windows"}},
		{Name: "broken-owner", Owner: runner.Owner{Org: "a", Repo: "b/c"}, Labels: []string{"linux", "solaris"}},
	}
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
			p, ok := cfg.Match(c.repo, c.org, c.enterprise, c.labels)
			got := ""
			if ok {
				got = p.Name
			}
			if got != c.want {
				t.Errorf("MatchPool = %q, want %q", got, c.want)
			}
			if ok && p != &cfg[indexOf(cfg, p.Name)] {
				t.Error("MatchPool returned a copy, not the configured pool")
			}
		})
	}
}

func TestPoolsGet(t *testing.T) {
	pools := runner.Pools{{Name: "a"}, {Name: "linux-x64"}}
	p, ok := pools.Get("linux-x64")
	if !ok || p != &pools[1] {
		t.Errorf("Get(linux-x64) = %v, %t", p, ok)
	}
	if _, ok := pools.Get("missing"); ok {
		t.Error("found a missing pool")
	}
}

func indexOf(pools runner.Pools, name string) int {
	for i := range pools {
		if pools[i].Name == name {
			return i
		}
	}
	return -1
}

func TestPoolIDIsStableAndPerInstallation(t *testing.T) {
	a := runner.PoolID("install-a", "linux")
	if a != runner.PoolID("install-a", "linux") {
		t.Fatal("PoolID is not deterministic")
	}
	if a == runner.PoolID("install-b", "linux") || a == runner.PoolID("install-a", "linux2") {
		t.Fatal("PoolID must differ per installation and per pool")
	}
	if len(a) != 36 || a[14] != '8' {
		t.Fatalf("PoolID %q is not UUID-shaped (version 8)", a)
	}
}

// A scale-set pool is never matched by labels: its jobs come named by its
// listener, and a webhook about one must not open a second demand.
func TestMatchSkipsScaleSetPools(t *testing.T) {
	ps := runner.Pools{
		{Name: "scale", Owner: runner.Owner{Org: "o"}, Labels: []string{"linux"}, ScaleSet: "linux-scale"},
		{Name: "hooks", Owner: runner.Owner{Org: "o"}, Labels: []string{"linux"}},
	}
	if p, ok := ps.Match("o/r", "o", "", []string{"linux"}); !ok || p.Name != "hooks" {
		t.Fatalf("matched %v %v, want the webhook pool", p, ok)
	}
	if _, ok := ps[:1].Match("o/r", "o", "", []string{"linux"}); ok {
		t.Fatal("a scale-set pool matched a webhook job")
	}
	if p, ok := ps.Get("scale"); !ok || p.ScaleSet != "linux-scale" {
		t.Fatal("a scale-set pool is not found by name")
	}
}
