package cache

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/store/bolt"
	"github.com/runfleet/runfleet/internal/testclock"
)

func TestDecideJob(t *testing.T) {
	push := JobEnv{Repository: "Org/App", Ref: "refs/heads/main", EventName: "push", DefaultBranch: "main"}
	made := MachineJob{Live: true, Repository: "org/app"}
	cases := []struct {
		name   string
		env    JobEnv
		m      MachineJob
		pr     bool
		refuse string
		retry  bool
	}{
		{name: "the ledger's repository, case aside", env: push, m: made},
		{name: "a dead machine", env: push, m: MachineJob{Repository: "org/app"}, refuse: "not a live"},
		{name: "another repository than the job's", env: JobEnv{Repository: "org/other", Ref: "refs/heads/main", DefaultBranch: "main"},
			m: MachineJob{Live: true, Repository: "org/app", Active: true}, refuse: "not \"org/other\""},
		{name: "another repository before in_progress: retry", env: JobEnv{Repository: "org/other", Ref: "refs/heads/main", DefaultBranch: "main"},
			m: made, refuse: "not \"org/other\"", retry: true},
		{name: "not owner/name", env: JobEnv{Repository: "app", Ref: "refs/heads/main", DefaultBranch: "main"}, m: made, refuse: "owner/name"},
		{name: "not a ref", env: JobEnv{Repository: "org/app", Ref: "main", DefaultBranch: "main"}, m: made, refuse: "not a git ref"},
		{name: "no default branch", env: JobEnv{Repository: "org/app", Ref: "refs/heads/main"}, m: made, refuse: "default branch"},
		{name: "pull_request", env: JobEnv{Repository: "org/app", Ref: "refs/pull/3/merge", EventName: "pull_request", BaseRef: "main", DefaultBranch: "main"}, m: made, pr: true},
		{name: "pull_request_target", env: JobEnv{Repository: "org/app", Ref: "refs/heads/main", EventName: "pull_request_target", DefaultBranch: "main"}, m: made, pr: true},
		{name: "a refs/pull ref whatever the event", env: JobEnv{Repository: "org/app", Ref: "refs/pull/3/merge", EventName: "workflow_run", DefaultBranch: "main"}, m: made, pr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j, err := DecideJob(c.env, c.m)
			if c.refuse != "" {
				var je *JobRefusedError
				if !errors.As(err, &je) || !strings.Contains(je.Reason, c.refuse) || je.Retry != c.retry {
					t.Fatalf("err = %v, want a refusal with %q (retry %v)", err, c.refuse, c.retry)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if j.Repo != c.m.Repository || j.RepoID != RepoIDFor("ORG/app") || j.PullRequest != c.pr || j.Ref != c.env.Ref {
				t.Fatalf("job = %+v", j)
			}
		})
	}
}

func TestRepoIDFor(t *testing.T) {
	a, b := RepoIDFor("org/a"), RepoIDFor("org/b")
	if a <= 0 || b <= 0 || a == b || RepoIDFor("Org/A") != a {
		t.Fatalf("ids %d %d", a, b)
	}
}

// boltStore is a fresh bbolt store: the job bindings' leases.
func boltStore(t *testing.T) *bolt.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

type mapLedger map[string]MachineJob

func (l mapLedger) MachineJob(_ context.Context, instance string) (MachineJob, error) {
	return l[instance], nil
}

// TestJobTokenHandler: the trade of an agent token and a job's description
// for the job's cache token, and each refusal.
func TestJobTokenHandler(t *testing.T) {
	clock := testclock.At(time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC))
	agents, err := NewAgentTokens(testKey, "ctl", clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := NewTokens(testKey, "ctl", clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	ledger := mapLedger{"m-1": {Live: true, Repository: "org/app", Active: true}}
	h, err := NewJobTokenHandler(JobTokenOptions{Agents: agents, Tokens: tokens, Ledger: ledger, Bindings: boltStore(t), Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	agentTok, err := agents.Mint("m-1", "linux", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	instanceLike, err := tokens.Mint("m-1", Grant{RepoID: 1, Read: []string{"refs/heads/main"}}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	call := func(tok, body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, JobTokenPath, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	pr := `{"repository":"org/app","ref":"refs/heads/main","event_name":"pull_request_target","default_branch":"main"}`
	push := `{"repository":"org/app","ref":"refs/heads/main","event_name":"push","default_branch":"main"}`

	w := call(agentTok, push)
	var resp JobTokenResponse
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &resp) != nil {
		t.Fatalf("push: %d %s", w.Code, w.Body)
	}
	c, err := tokens.Verify(resp.Token)
	if err != nil || c.Write != "refs/heads/main" || c.RepoID != RepoIDFor("org/app") || c.Instance != "m-1" {
		t.Fatalf("claim %+v %v", c, err)
	}
	// The agent token had an hour left: the job token dies with it.
	if !c.ExpiresAt.Equal(clock.Now().Add(time.Hour).Truncate(time.Second)) {
		t.Fatalf("expires %v", c.ExpiresAt)
	}

	// The machine is bound to the push: the same job described as a
	// pull_request_target is another scope, refused.
	if w := call(agentTok, pr); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "bound to") {
		t.Fatalf("another description of m-1's job: %d %s", w.Code, w.Body)
	}
	ledger["m-2"] = MachineJob{Live: true, Repository: "org/app", Active: true}
	agentTok2, err := agents.Mint("m-2", "linux", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w = call(agentTok2, pr)
	resp = JobTokenResponse{}
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &resp) != nil || resp.Write != "" {
		t.Fatalf("pull_request_target must get a read-only token: %d %s", w.Code, w.Body)
	}

	for name, tc := range map[string]struct {
		tok, body string
		status    int
	}{
		"a cache token is not an agent token": {instanceLike, push, http.StatusUnauthorized},
		"no token":                            {"", push, http.StatusUnauthorized},
		"another repository":                  {agentTok, `{"repository":"org/other","ref":"refs/heads/main","default_branch":"main"}`, http.StatusForbidden},
		"the same job again":                  {agentTok, push, http.StatusOK},
		"not JSON":                            {agentTok, "{", http.StatusBadRequest},
	} {
		if w := call(tc.tok, tc.body); w.Code != tc.status {
			t.Errorf("%s: %d %s", name, w.Code, w.Body)
		}
	}
	clock.Advance(2 * time.Hour)
	if w := call(agentTok, push); w.Code != http.StatusUnauthorized {
		t.Errorf("expired agent token: %d", w.Code)
	}
}
