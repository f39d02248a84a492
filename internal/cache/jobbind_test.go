package cache

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
)

// TestJobBinding: which descriptions bind a machine, and which are the
// same binding.
func TestJobBinding(t *testing.T) {
	pr := JobEnv{Repository: "Org/App", Ref: "refs/pull/7/merge", EventName: "pull_request", BaseRef: "main", DefaultBranch: "main"}
	same := pr
	same.Repository = "org/app"
	cases := []struct {
		name  string
		env   JobEnv
		binds bool
		as    bool // the same binding as pr's
	}{
		{name: "a pull request's job", env: pr, binds: true, as: true},
		{name: "the repository's case aside", env: same, binds: true, as: true},
		{name: "the default branch's ref", env: JobEnv{Repository: "org/app", Ref: "refs/heads/main", EventName: "pull_request", BaseRef: "main", DefaultBranch: "main"}, binds: true},
		{name: "another event", env: JobEnv{Repository: "org/app", Ref: "refs/pull/7/merge", EventName: "push", BaseRef: "main", DefaultBranch: "main"}, binds: true},
		{name: "another base", env: JobEnv{Repository: "org/app", Ref: "refs/pull/7/merge", EventName: "pull_request", BaseRef: "dev", DefaultBranch: "main"}, binds: true},
		{name: "another default branch", env: JobEnv{Repository: "org/app", Ref: "refs/pull/7/merge", EventName: "pull_request", BaseRef: "main", DefaultBranch: "dev"}, binds: true},
		{name: "another repository", env: JobEnv{Repository: "org/other", Ref: "refs/pull/7/merge", EventName: "pull_request", BaseRef: "main", DefaultBranch: "main"}, binds: true},
		{name: "a field's end moved into the next", env: JobEnv{Repository: "org/app", Ref: "refs/pull/7/merge", EventName: "pull_requestm", BaseRef: "ain", DefaultBranch: "main"}, binds: true},
		{name: "no default branch (event file unread)", env: JobEnv{Repository: "org/app", Ref: "refs/pull/7/merge", EventName: "pull_request"}},
		{name: "not a ref", env: JobEnv{Repository: "org/app", Ref: "main", DefaultBranch: "main"}},
		{name: "not owner/name", env: JobEnv{Repository: "app", Ref: "refs/heads/main", DefaultBranch: "main"}},
		{name: "an empty owner", env: JobEnv{Repository: "/app", Ref: "refs/heads/main", DefaultBranch: "main"}},
		{name: "nothing", env: JobEnv{}},
	}
	want := JobBinding(pr)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := JobBinding(c.env)
			if (got != "") != c.binds || (got == want) != c.as {
				t.Fatalf("binding %q (pr's %q): binds %v, same %v", got, want, c.binds, c.as)
			}
			if c.binds && boundRef(got) != c.env.Ref {
				t.Fatalf("binding %q names ref %q", got, boundRef(got))
			}
		})
	}
}

// TestDecideBinding: the store's answer to the acquire, as the handler
// acts on it.
func TestDecideBinding(t *testing.T) {
	pr := JobEnv{Repository: "org/app", Ref: "refs/pull/7/merge", EventName: "pull_request", BaseRef: "main", DefaultBranch: "main"}
	main := JobEnv{Repository: "org/app", Ref: "refs/heads/main", EventName: "push", DefaultBranch: "main"}
	held := &runner.LeaseHeldError{Name: JobBindingLease("m-1"), Holder: JobBinding(pr), ExpiresAt: time.Now()}
	cases := []struct {
		name    string
		env     JobEnv
		holder  string
		err     error
		outcome BindOutcome
		says    string
	}{
		{name: "not well-formed: nothing asked", env: JobEnv{Repository: "org/app"}, outcome: BindSkip},
		{name: "bound now or already", env: pr, holder: JobBinding(pr), outcome: BindHeld},
		{name: "bound to another description", env: main, holder: JobBinding(main), err: held, outcome: BindRefused, says: "bound to the job its job-started hook described (ref refs/pull/7/merge); a token for ref refs/heads/main"},
		{name: "the store could not answer", env: main, holder: JobBinding(main), err: errors.New("connection reset"), outcome: BindFailed, says: "connection reset"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := DecideBinding(c.env, c.holder, c.err)
			if got != c.outcome {
				t.Fatalf("outcome %d, want %d (%v)", got, c.outcome, err)
			}
			if (err != nil) != (c.says != "") || (err != nil && !strings.Contains(err.Error(), c.says)) {
				t.Fatalf("err %v, want one saying %q", err, c.says)
			}
			var be *ScopeBoundError
			if c.outcome == BindRefused && (!errors.As(err, &be) || be.BoundRef != pr.Ref || be.Ref != main.Ref) {
				t.Fatalf("refusal %#v", err)
			}
		})
	}
}
