package githubtest

import (
	"fmt"
	"strings"
)

// Owner kinds, named as GitHub's paths name them.
const (
	kindOrg        = "org"
	kindRepo       = "repo"
	kindEnterprise = "enterprise"
)

// DefaultRunnerGroupID is the id of every organization's and enterprise's
// "Default" runner group; repository runners always belong to it.
const DefaultRunnerGroupID int64 = 1

// DefaultRunnerGroupName is the default group's name.
const DefaultRunnerGroupName = "Default"

// RunnerGroup is a runner group of an organization or enterprise.
type RunnerGroup struct {
	ID      int64
	Name    string
	Default bool
}

// owner is somewhere runners register: an organization, a repository or an
// enterprise. Its key is the string form runfleet's config uses: "org",
// "org/repo" or "enterprise:slug".
type owner struct {
	kind   string
	key    string
	groups []RunnerGroup
}

func ownerKey(kind string, params map[string]string) string {
	switch kind {
	case kindRepo:
		return params["owner"] + "/" + params["repo"]
	case kindEnterprise:
		return "enterprise:" + params["enterprise"]
	default:
		return params["org"]
	}
}

// ownerIndex is an owner's key in Server.owners: GitHub matches logins,
// repository names and enterprise slugs case-insensitively.
func ownerIndex(key string) string { return strings.ToLower(key) }

// htmlURL is the owner's page on github.com, where its runners register.
func (o *owner) htmlURL() string {
	if o.kind == kindEnterprise {
		return "https://github.com/enterprises/" + strings.TrimPrefix(o.key, "enterprise:")
	}
	return "https://github.com/" + o.key
}

// account is who an installation must be installed on to reach the owner.
func (o *owner) account() string {
	if o.kind == kindRepo {
		org, _, _ := strings.Cut(o.key, "/")
		return org
	}
	return o.key
}

func (o *owner) group(id int64) (RunnerGroup, bool) {
	for _, g := range o.groups {
		if g.ID == id {
			return g, true
		}
	}
	return RunnerGroup{}, false
}

// AddOrg registers an organization (with its Default runner group). Calls
// for owners that were never added answer 404, as GitHub does.
func (s *Server) AddOrg(org string) {
	s.addOwner(kindOrg, org)
}

// AddRepo registers a repository given as "owner/repo".
func (s *Server) AddRepo(fullName string) {
	org, repo, ok := strings.Cut(fullName, "/")
	if !ok || org == "" || repo == "" || strings.Contains(repo, "/") {
		s.t.Errorf("githubtest: AddRepo(%q): want \"owner/repo\"", fullName)
		return
	}
	s.addOwner(kindRepo, fullName)
}

// AddEnterprise registers an enterprise by slug.
func (s *Server) AddEnterprise(slug string) {
	s.addOwner(kindEnterprise, "enterprise:"+slug)
}

func (s *Server) addOwner(kind, key string) *owner {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ensureOwner(kind, key)
}

func (s *Server) ensureOwner(kind, key string) *owner {
	if o, ok := s.owners[ownerIndex(key)]; ok {
		return o
	}
	o := &owner{kind: kind, key: key, groups: []RunnerGroup{{ID: DefaultRunnerGroupID, Name: DefaultRunnerGroupName, Default: true}}}
	s.owners[ownerIndex(key)] = o
	return o
}

// lookupOwner finds an owner by the key form "org", "org/repo" or
// "enterprise:slug".
func (s *Server) lookupOwner(key string) (*owner, error) {
	o, ok := s.owners[ownerIndex(key)]
	if !ok {
		return nil, fmt.Errorf("githubtest: owner %q was never added (AddOrg/AddRepo/AddEnterprise)", key)
	}
	return o, nil
}

// AddRunnerGroup adds a runner group to an organization or enterprise owner
// ("org" or "enterprise:slug") and returns its id.
func (s *Server) AddRunnerGroup(ownerKey, name string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.lookupOwner(ownerKey)
	if err != nil {
		s.t.Errorf("%v", err)
		return 0
	}
	if o.kind == kindRepo {
		s.t.Errorf("githubtest: AddRunnerGroup(%q): repositories have no runner groups", ownerKey)
		return 0
	}
	id := s.nextGroupID
	s.nextGroupID++
	o.groups = append(o.groups, RunnerGroup{ID: id, Name: name})
	return id
}
