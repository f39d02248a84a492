package cache_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/cache"
	"github.com/runfleet/runfleet/internal/cacheagent"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
	"github.com/runfleet/runfleet/internal/store/bolt"
	dynamostore "github.com/runfleet/runfleet/internal/store/dynamodb"
	"github.com/runfleet/runfleet/internal/store/postgres"
	"github.com/runfleet/runfleet/internal/store/postgres/pgtest"
	"github.com/runfleet/runfleet/internal/testclock"
	"github.com/runfleet/runfleet/internal/testenv"
	"github.com/runfleet/runfleet/internal/testlog"
)

// bindingStores are the stores runfleet runs on, each fresh.
var bindingStores = map[string]func(t *testing.T) store.Store{
	"bbolt": func(t *testing.T) store.Store {
		st, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	},
	"postgres": func(t *testing.T) store.Store {
		st, err := postgres.Open(context.Background(), pgtest.NewSchema(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	},
	"dynamodb": func(t *testing.T) store.Store {
		client := testenv.DynamoDB(t)
		table := testenv.UniqueName(t, "bind")
		if err := dynamostore.CreateTable(context.Background(), client, table); err != nil {
			t.Fatal(err)
		}
		return dynamostore.New(client, table)
	},
}

// TestJobScopeIsBoundOnEveryStore: the first well-formed description of
// its job a machine presents is the only one runfleet mints for. A pull
// request's job that becomes root on its machine cannot claim the default
// branch's ref — not through the agent that registered the job, nor a
// restarted agent with the same agent token.
func TestJobScopeIsBoundOnEveryStore(t *testing.T) {
	for name, open := range bindingStores {
		t.Run(name, func(t *testing.T) { checkJobBinding(t, open(t)) })
	}
}

func checkJobBinding(t *testing.T, st store.Store) {
	ctx := context.Background()
	clock := testclock.At(time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC))
	logs := &testlog.Buffer{}
	key := bytes.Repeat([]byte("k"), 32)
	agents, err := cache.NewAgentTokens(key, "ctl", clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := cache.NewTokens(key, "ctl", clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	h, err := cache.NewJobTokenHandler(cache.JobTokenOptions{Agents: agents, Tokens: tokens,
		Ledger: cache.StoreLedger{Store: st}, Bindings: st, Now: clock.Now, Log: logs.Logger(slog.LevelInfo)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	machine := func(jobID int64, repository string) (string, func() (string, error)) {
		t.Helper()
		now := clock.Now()
		name := runner.InstanceName("linux", jobID, 1)
		if err := st.CreateInstance(ctx, store.Admission{Instance: &runner.Instance{
			Name: name, Pool: "linux", Status: runner.StatusRunning, RunnerStatus: runner.RunnerIdle,
			JobID: jobID, RunAttempt: 1, Repository: repository, Owner: runner.Owner{Org: "org"}, Labels: []string{"self-hosted", "linux"},
			CreatedAt: now, UpdatedAt: now, StatusChangedAt: now,
		}, MaxRunners: 10}); err != nil {
			t.Fatal(err)
		}
		tok, err := agents.Mint(name, "linux", 24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return name, func() (string, error) { return tok, nil }
	}
	agent := func(tok func() (string, error)) *cacheagent.JobTokens {
		return &cacheagent.JobTokens{URL: srv.URL, AgentToken: tok, Now: clock.Now}
	}
	trade := func(j *cacheagent.JobTokens, env cache.JobEnv) (cache.Claim, error) {
		t.Helper()
		if err := j.Register(env); err != nil {
			t.Fatal(err)
		}
		raw, err := j.Token(ctx)
		if err != nil {
			return cache.Claim{}, err
		}
		return tokens.Verify(raw)
	}
	refused := func(err error, status int, words string) bool {
		var re *cacheagent.TradeRefusedError
		return errors.As(err, &re) && re.Status == status && strings.Contains(re.Body, words)
	}
	pr := cache.JobEnv{Repository: "org/app", Ref: "refs/pull/7/merge", EventName: "pull_request", BaseRef: "main", DefaultBranch: "main"}
	main := cache.JobEnv{Repository: "org/app", Ref: "refs/heads/main", EventName: "push", DefaultBranch: "main"}

	prMachine, prAgentToken := machine(7001, "org/app")
	prAgent := agent(prAgentToken)
	c, err := trade(prAgent, pr)
	if err != nil || c.Write != pr.Ref {
		t.Fatalf("the pull request's job: claim %+v, %v", c, err)
	}

	t.Run("the default branch's ref from the same agent", func(t *testing.T) {
		// The agent takes one registration; a job that is root reaches
		// runfleet with the agent's token itself, as the agent would.
		if err := prAgent.Register(main); !errors.Is(err, cacheagent.ErrRegistered) {
			t.Fatalf("a second registration: %v", err)
		}
		if _, err := trade(agent(prAgentToken), main); !refused(err, http.StatusForbidden, "bound to the job its job-started hook described (ref refs/pull/7/merge)") {
			t.Fatalf("err = %v, want 403 naming the bound ref", err)
		}
		line := logs.Lines(t, map[string]any{"msg": "cache: job token refused", "status": float64(http.StatusForbidden)})
		if len(line) == 0 || line[len(line)-1]["instance"] != prMachine || line[len(line)-1]["pool"] != "linux" ||
			line[len(line)-1]["repo"] != "org/app" || line[len(line)-1]["bound_ref"] != pr.Ref || line[len(line)-1]["ref"] != main.Ref {
			t.Fatalf("refusal log lines %v", line)
		}
	})
	t.Run("the default branch's ref from a restarted agent", func(t *testing.T) {
		clock.Advance(time.Hour)
		if _, err := trade(agent(prAgentToken), main); !refused(err, http.StatusForbidden, "ref refs/pull/7/merge") {
			t.Fatalf("err = %v, want 403", err)
		}
	})
	t.Run("the same description again is served", func(t *testing.T) {
		c, err := trade(agent(prAgentToken), pr)
		if err != nil || c.Write != pr.Ref {
			t.Fatalf("claim %+v, %v", c, err)
		}
		l, err := st.GetLease(ctx, cache.JobBindingLease(prMachine))
		if err != nil || l.Holder != cache.JobBinding(pr) || !l.ExpiresAt.Equal(clock.Now().Add(23*time.Hour)) {
			t.Fatalf("binding %+v, %v: want the pull request's, to the agent token's end", l, err)
		}
	})
	t.Run("a description that is not well-formed binds nothing", func(t *testing.T) {
		_, tok := machine(7002, "org/app")
		broken := main
		broken.DefaultBranch = "" // the hook could not read the event file
		if _, err := trade(agent(tok), broken); !refused(err, http.StatusForbidden, "no default branch") {
			t.Fatalf("err = %v", err)
		}
		if c, err := trade(agent(tok), main); err != nil || c.Write != main.Ref {
			t.Fatalf("then the whole description: claim %+v, %v", c, err)
		}
	})
	t.Run("a machine never bound gets its first description", func(t *testing.T) {
		_, tok := machine(7003, "org/app")
		if c, err := trade(agent(tok), main); err != nil || c.Write != main.Ref {
			t.Fatalf("claim %+v, %v", c, err)
		}
	})
	t.Run("the first trade binds even while the ledger says retry", func(t *testing.T) {
		// The machine was made for another repository's job; the one its
		// runner took is not in the ledger yet: 409, and bound all the same.
		_, tok := machine(7004, "org/other")
		if _, err := trade(agent(tok), pr); !refused(err, http.StatusConflict, "the machine's job is of") {
			t.Fatalf("err = %v, want 409", err)
		}
		if _, err := trade(agent(tok), main); !refused(err, http.StatusForbidden, "ref refs/pull/7/merge") {
			t.Fatalf("err = %v, want 403: the 409'd trade bound the machine", err)
		}
	})
}
