package config

import (
	"strings"

	"github.com/runfleet/runfleet/internal/github"
)

// selfHosted is the label GitHub gives every self-hosted runner; a pool
// serves it without listing it.
const selfHosted = "self-hosted"

// Pool returns the pool named name (case-insensitive).
func (c *Config) Pool(name string) (*Pool, bool) {
	for i := range c.Pools {
		if strings.EqualFold(c.Pools[i].Name, name) {
			return &c.Pools[i], true
		}
	}
	return nil, false
}

// MatchPool returns the first pool, in config order, that serves the job's
// owner and covers all its labels. repoFullName is "org/repo", orgLogin the
// event's organization and enterpriseSlug its enterprise (either may be
// empty). Config order makes the choice deterministic: list specific pools
// before general ones.
func (c *Config) MatchPool(repoFullName, orgLogin, enterpriseSlug string, jobLabels []string) (*Pool, bool) {
	for i := range c.Pools {
		p := &c.Pools[i]
		if p.ServesOwner(repoFullName, orgLogin, enterpriseSlug) && p.Matches(jobLabels) {
			return p, true
		}
	}
	return nil, false
}

// ServesOwner reports whether the pool's owner covers a job of the
// repository repoFullName: an "org" pool serves every repository of that
// organization, an "org/repo" pool only that repository, an
// "enterprise:slug" pool every job delivered with that enterprise. All
// comparisons ignore case, as GitHub's logins do.
func (p *Pool) ServesOwner(repoFullName, orgLogin, enterpriseSlug string) bool {
	owner, err := github.ParseOwner(p.Owner)
	if err != nil {
		return false
	}
	switch {
	case owner.Enterprise != "":
		return enterpriseSlug != "" && strings.EqualFold(owner.Enterprise, enterpriseSlug)
	case owner.Repo != "":
		return strings.EqualFold(owner.Org+"/"+owner.Repo, repoFullName)
	default:
		return orgLogin != "" && strings.EqualFold(owner.Org, orgLogin)
	}
}

// Matches reports whether the pool's runners can take a job with these
// labels: every job label must be one of the pool's, ignoring case, with
// "self-hosted" implied. A job without labels matches nothing — it was not
// asking for a self-hosted runner.
func (p *Pool) Matches(jobLabels []string) bool {
	if len(jobLabels) == 0 {
		return false
	}
	for _, want := range jobLabels {
		if !p.hasLabel(want) {
			return false
		}
	}
	return true
}

func (p *Pool) hasLabel(label string) bool {
	if strings.EqualFold(label, selfHosted) {
		return true
	}
	for _, have := range p.Labels {
		if strings.EqualFold(have, label) {
			return true
		}
	}
	return false
}
