package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strings"
)

// JobEnv is what the cache agent on a runner machine says of the job it
// runs, read at job start from the runner's job-started hook (the job's
// GITHUB_* variables, before any step of the job ran) and from the event
// file.
type JobEnv struct {
	// Repository is GITHUB_REPOSITORY, owner/name.
	Repository string `json:"repository"`
	// Ref is GITHUB_REF.
	Ref string `json:"ref"`
	// EventName is GITHUB_EVENT_NAME.
	EventName string `json:"event_name"`
	// BaseRef is GITHUB_BASE_REF, a pull request's base branch.
	BaseRef string `json:"base_ref,omitempty"`
	// DefaultBranch is the event's repository.default_branch.
	DefaultBranch string `json:"default_branch"`
}

// MachineJob is what runfleet's ledger says of the machine that asks.
type MachineJob struct {
	// Live: the instance exists and is not deleted.
	Live bool
	// Repository is the repository of the job the machine runs: the job
	// GitHub gave its runner once known (in_progress), else the queued job
	// it was made for.
	Repository string
	// Active: Repository is the job GitHub gave the runner, not only the
	// one it was made for.
	Active bool
}

// RepoIDFor is the repository id the cache keys a repository's entries
// by: derived from the name the ledger confirmed, never from a number the
// machine sends, so a machine can name no repository but its job's.
// SHA-256, not a fast hash: a crafted repository name must not collide
// with another's id. A renamed repository starts a new cache.
func RepoIDFor(repository string) int64 {
	s := sha256.Sum256([]byte("runfleet-cache-repo\n" + strings.ToLower(repository)))
	id := int64(binary.BigEndian.Uint64(s[:8]) &^ (1 << 63))
	if id == 0 {
		id = 1
	}
	return id
}

// JobRefusedError is a refused job-token request; Retry says the ledger
// may know better soon (the job's in_progress event not in yet).
type JobRefusedError struct {
	Reason string
	Retry  bool
}

func (e *JobRefusedError) Error() string { return "cache: job token refused: " + e.Reason }

// isPullRequestEvent: every event a pull request triggers, whose job must
// never write the default branch's scope.
func isPullRequestEvent(event, ref string) bool {
	return strings.HasPrefix(event, "pull_request") || strings.HasPrefix(ref, "refs/pull/")
}

// DecideJob checks what a machine says of its job against the ledger and
// returns the job to scope its cache token by. The repository must be the
// ledger's (case aside, as GitHub's names are); a machine whose runner took
// a job of another repository than the one it was made for (an
// organization's runner) is refused until the ledger has seen that job.
func DecideJob(env JobEnv, m MachineJob) (Job, error) {
	switch problem := malformed(env); {
	case !m.Live:
		return Job{}, &JobRefusedError{Reason: "the machine is not a live runfleet instance"}
	case problem != "":
		return Job{}, &JobRefusedError{Reason: problem}
	case !strings.EqualFold(env.Repository, m.Repository):
		return Job{}, &JobRefusedError{
			Reason: fmt.Sprintf("the machine's job is of %q, not %q", m.Repository, env.Repository),
			Retry:  !m.Active,
		}
	}
	return Job{
		RepoID:        RepoIDFor(m.Repository),
		Repo:          m.Repository,
		Ref:           env.Ref,
		PullRequest:   isPullRequestEvent(env.EventName, env.Ref),
		BaseRef:       env.BaseRef,
		DefaultBranch: env.DefaultBranch,
	}, nil
}
