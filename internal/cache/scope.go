package cache

import (
	"fmt"
	"strings"
)

// Job is what runfleet knows of the job a runner was made for, enough to
// scope its cache: the repository, the job's ref (GITHUB_REF), a pull
// request's base branch and the repository's default branch.
type Job struct {
	RepoID int64
	// Repo is owner/name, for logs.
	Repo string
	// Ref is the job's GITHUB_REF: refs/heads/x, refs/tags/v1 or, for a
	// pull request, refs/pull/N/merge.
	Ref string
	// PullRequest is set for any job a pull request triggered, whatever
	// its ref (pull_request_target runs on the default branch's ref).
	PullRequest bool
	// BaseRef is a pull request's base branch (main or refs/heads/main).
	BaseRef string
	// DefaultBranch is the repository's default branch (main or
	// refs/heads/main).
	DefaultBranch string
}

// Grant is what a cache token allows: read these scopes of one repository,
// in this order, and write one scope (none when Write is empty).
type Grant struct {
	RepoID int64
	Repo   string
	Write  string
	Read   []string
}

// branchRef turns a branch name into its ref; a ref stays as it is.
func branchRef(b string) string {
	if b == "" || strings.HasPrefix(b, "refs/") {
		return b
	}
	return "refs/heads/" + b
}

// GrantFor scopes a job's cache as GitHub does, a little stricter: it reads
// its own ref, then a pull request's base branch, then the default branch,
// and writes its own ref. A pull request's job never writes the default
// branch's scope — not even pull_request_target, which GitHub lets run on
// the default branch's ref and is the known way to poison a cache: such a
// job gets a read-only grant.
func GrantFor(j Job) (Grant, error) {
	if j.RepoID <= 0 {
		return Grant{}, &InvalidError{Field: "repository", Reason: fmt.Sprintf("id %d is not positive", j.RepoID)}
	}
	ref := j.Ref
	if !strings.HasPrefix(ref, "refs/") {
		return Grant{}, &InvalidError{Field: "ref", Reason: fmt.Sprintf("%q is not a git ref (refs/...)", ref)}
	}
	def := branchRef(j.DefaultBranch)
	if def == "" {
		return Grant{}, &InvalidError{Field: "default branch", Reason: "empty"}
	}
	g := Grant{RepoID: j.RepoID, Repo: j.Repo, Write: ref}
	if j.PullRequest && ref == def {
		g.Write = ""
	}
	g.Read = appendNew(g.Read, ref)
	if j.PullRequest {
		g.Read = appendNew(g.Read, branchRef(j.BaseRef))
	}
	g.Read = appendNew(g.Read, def)
	return g, nil
}

func appendNew(list []string, s string) []string {
	if s == "" {
		return list
	}
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
