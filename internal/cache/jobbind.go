package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// JobBindingLeasePrefix names the lease that binds a machine's cache scope:
// "cache-job/<instance>". Its holder is JobBinding(env) of the first
// well-formed description the machine presented. It is one of the store's
// once-only lease prefixes, so a lapsed binding's record is removed.
const JobBindingLeasePrefix = store.CacheJobLeasePrefix

// JobBindingLease is the binding lease's name for instance.
func JobBindingLease(instance string) string { return JobBindingLeasePrefix + instance }

// wellFormed says whether env can scope a cache token at all: a repository
// owner/name, a ref under refs/, a default branch. Only such a description
// binds a machine: a broken one (an event file the hook could not read)
// must not lock the machine out of the right one.
func wellFormed(env JobEnv) bool { return malformed(env) == "" }

// malformed says what makes env unable to scope a cache token ("" when
// nothing): the one reading of a description's shape, for the binding
// and for DecideJob.
func malformed(env JobEnv) string {
	owner, name, ok := strings.Cut(env.Repository, "/")
	switch {
	case !ok || owner == "" || name == "":
		return fmt.Sprintf("repository %q is not owner/name", env.Repository)
	case !strings.HasPrefix(env.Ref, "refs/"):
		return fmt.Sprintf("ref %q is not a git ref", env.Ref)
	case env.DefaultBranch == "":
		return "no default branch"
	}
	return ""
}

// JobBinding is the lease holder that binds a machine to env: a digest of
// every field that scopes the job's cache token (the repository, case
// aside, the ref, the event, the base and default branches), then the ref
// in clear so a refusal can name what the machine is bound to. "" when env
// is not well-formed: it binds nothing.
func JobBinding(env JobEnv) string {
	if !wellFormed(env) {
		return ""
	}
	h := sha256.New()
	for _, f := range []string{strings.ToLower(env.Repository), env.Ref, env.EventName, env.BaseRef, env.DefaultBranch} {
		// Length-prefixed, so no two descriptions share a digest by
		// moving a character from one field to the next.
		fmt.Fprintf(h, "%d:%s\n", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil)) + " " + env.Ref
}

// boundRef is the ref a binding names (its part after the digest).
func boundRef(holder string) string {
	_, ref, _ := strings.Cut(holder, " ")
	return ref
}

// ScopeBoundError is a machine asking for another job scope than the one
// it is bound to: the first well-formed description it presented, which
// its job-started hook sent before any step of the job ran.
type ScopeBoundError struct {
	BoundRef, Ref string
}

func (e *ScopeBoundError) Error() string {
	return fmt.Sprintf("this machine's cache is bound to the job its job-started hook described (ref %s); a token for ref %s (or another description of the job) is refused", e.BoundRef, e.Ref)
}

// BindOutcome is what DecideBinding concluded.
type BindOutcome int

const (
	// BindSkip: env is not well-formed; nothing is bound and the ledger's
	// checks refuse it.
	BindSkip BindOutcome = iota
	// BindHeld: the machine is bound to env (just now, or already).
	BindHeld
	// BindRefused: the machine is bound to another description.
	BindRefused
	// BindFailed: the store could not answer; nothing may be minted.
	BindFailed
)

// DecideBinding reads the store's answer to acquiring the binding lease
// for holder (JobBinding(env); "" when nothing was asked): nil is a
// binding held, a *runner.LeaseHeldError another description's binding
// (a *ScopeBoundError naming the bound ref), anything else a store that
// could not answer.
func DecideBinding(env JobEnv, holder string, acquireErr error) (BindOutcome, error) {
	if holder == "" {
		return BindSkip, nil
	}
	var held *runner.LeaseHeldError
	switch {
	case acquireErr == nil:
		return BindHeld, nil
	case errors.As(acquireErr, &held):
		return BindRefused, &ScopeBoundError{BoundRef: boundRef(held.Holder), Ref: env.Ref}
	default:
		return BindFailed, acquireErr
	}
}
