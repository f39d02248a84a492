package cacheagent

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/cache"
)

// TestTradeNowAsksAgainAfterAConflict: runfleet answers 409 while its
// ledger has not seen the job start; the registration's trade asks again
// and gets the token, and stops at once on a 403.
func TestTradeNowAsksAgainAfterAConflict(t *testing.T) {
	var calls atomic.Int32
	conflicts := int32(2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		switch {
		case r.URL.Path == "/forbidden":
			http.Error(w, `{"error":"bound"}`, http.StatusForbidden)
		case n <= conflicts:
			http.Error(w, `{"error":"retry"}`, http.StatusConflict)
		default:
			_ = json.NewEncoder(w).Encode(cache.JobTokenResponse{Token: "tok", ExpiresAt: time.Now().Add(time.Hour)})
		}
	}))
	t.Cleanup(srv.Close)
	env := cache.JobEnv{Repository: "org/app", Ref: "refs/heads/main", EventName: "push", DefaultBranch: "main"}
	jobs := &JobTokens{URL: srv.URL, AgentToken: func() (string, error) { return "agent", nil }}
	if err := jobs.Register(env); err != nil {
		t.Fatal(err)
	}
	if err := jobs.TradeNow(context.Background()); err != nil || calls.Load() != 3 {
		t.Fatalf("TradeNow = %v after %d calls, want the token at the third", err, calls.Load())
	}

	calls.Store(0)
	refused := &JobTokens{URL: srv.URL + "/forbidden", AgentToken: func() (string, error) { return "agent", nil }}
	if err := refused.Register(env); err != nil {
		t.Fatal(err)
	}
	var re *TradeRefusedError
	if err := refused.TradeNow(context.Background()); !errors.As(err, &re) || re.Status != http.StatusForbidden || calls.Load() != 1 {
		t.Fatalf("TradeNow = %v after %d calls, want one 403", err, calls.Load())
	}
}

// TestHookRegistersWhenRunfleetIsSlow: a runfleet that does not answer
// within the trade's wait does not fail the registration (nor the hook);
// the first cache call trades then.
func TestHookRegistersWhenRunfleetIsSlow(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); slow.Close() })
	w := newAgentWorld(t, nil, slow.URL, true)
	w.jobs.TradeWait = 300 * time.Millisecond
	out := runHook(t, w.serveSocket(t), map[string]string{
		"GITHUB_REPOSITORY": "org/app", "GITHUB_REF": "refs/heads/main", "GITHUB_EVENT_NAME": "push",
		"GITHUB_EVENT_PATH": eventFile(t, `{"repository":{"default_branch":"main"}}`),
	})
	if strings.Contains(out, "not told") {
		t.Fatalf("the registration failed: %s", out)
	}
	got := w.logs.WithMessage(t, "no job token at registration")
	if len(got) != 1 || !strings.Contains(got[0]["err"].(string), "deadline exceeded") {
		t.Fatalf("warnings %v, want one of the trade's deadline", got)
	}
	if got := w.logs.WithMessage(t, "cacheagent: job registered"); len(got) != 1 {
		t.Fatalf("registrations %v, want one", got)
	}
}

// TestHookDoesNotWaitForTheLedger: the hook's one trade binds the job
// (runfleet binds at the first trade, even one it answers 409); a 409 is
// asked again in the background, so the job's first step never waits for
// runfleet's ledger to see the job start, and the token is there later.
func TestHookDoesNotWaitForTheLedger(t *testing.T) {
	var calls atomic.Int32
	served := make(chan struct{})
	release := make(chan struct{})
	ledgerLate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		switch {
		case n == 1:
			http.Error(w, `{"error":"the ledger has not seen the job start"}`, http.StatusConflict)
		case n == 2:
			// The second ask comes only after the hook has returned.
			<-release
			http.Error(w, `{"error":"the ledger has not seen the job start"}`, http.StatusConflict)
		default:
			_ = json.NewEncoder(w).Encode(cache.JobTokenResponse{Token: "tok", ExpiresAt: time.Now().Add(time.Hour)})
			close(served)
		}
	}))
	t.Cleanup(ledgerLate.Close)
	w := newAgentWorld(t, nil, ledgerLate.URL, true)
	out := runHook(t, w.serveSocket(t), map[string]string{
		"GITHUB_REPOSITORY": "org/app", "GITHUB_REF": "refs/heads/main", "GITHUB_EVENT_NAME": "push",
		"GITHUB_EVENT_PATH": eventFile(t, `{"repository":{"default_branch":"main"}}`),
	})
	if strings.Contains(out, "not told") {
		t.Fatalf("the registration failed: %s", out)
	}
	// The hook returned while the background trade's second ask is held:
	// the job's first step did not wait for it.
	close(release)
	<-served
	// The agent logs the token once the answer is read: wait for it.
	for len(w.logs.WithMessage(t, "cacheagent: job token received")) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d trades, want 3 (the hook's, two in the background)", n)
	}
}
