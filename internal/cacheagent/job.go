package cacheagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/runfleet/runfleet/internal/cache"
)

// ErrNoJob: the job-started hook has not said which job the machine runs.
var ErrNoJob = errors.New("the job-started hook has not registered the job yet")

// ErrRegistered: a second registration. A runfleet machine runs one job;
// the hook registers it before any of the job's steps run, so a later
// registration can only come from the job itself and is refused.
var ErrRegistered = errors.New("this machine's job is registered already")

// JobTokens is the agent's TokenSource: it holds the job the hook
// registered and trades it, with the machine's agent token, for the job's
// cache token at runfleet (cache.JobTokenPath), keeping it until shortly
// before it expires.
type JobTokens struct {
	// URL is runfleet's job token endpoint.
	URL string
	// AgentToken reads the machine's agent token (a root-only file).
	AgentToken func() (string, error)
	Client     *http.Client
	Now        func() time.Time
	Log        *slog.Logger
	// TradeWait bounds the trade the registration makes at once
	// (default DefaultTradeWait): the hook's curl gives up after 10 s.
	TradeWait time.Duration

	mu  sync.Mutex
	env *cache.JobEnv
	tok string
	exp time.Time
}

// Register records the machine's job, once.
func (j *JobTokens) Register(env cache.JobEnv) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.env != nil {
		return ErrRegistered
	}
	j.env = &env
	return nil
}

// Token implements TokenSource.
func (j *JobTokens) Token(ctx context.Context) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := j.now()
	if j.env == nil {
		return "", ErrNoJob
	}
	if j.tok != "" && now.Add(time.Minute).Before(j.exp) {
		return j.tok, nil
	}
	agent, err := j.AgentToken()
	if err != nil {
		return "", fmt.Errorf("agent token: %w", err)
	}
	body, _ := json.Marshal(j.env)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.URL, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+agent)
	client := j.Client
	if client == nil {
		client = &http.Client{Timeout: 15 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return "", &TradeRefusedError{Status: resp.StatusCode, Body: string(bytes.TrimSpace(b))}
	}
	var r cache.JobTokenResponse
	if err := json.Unmarshal(b, &r); err != nil || r.Token == "" {
		return "", fmt.Errorf("runfleet's job token answer: %v", err)
	}
	j.tok, j.exp = r.Token, r.ExpiresAt
	if j.Log != nil {
		j.Log.Info("cacheagent: job token received", "repo", r.Repo, "write", r.Write, "read", r.Read, "expires_at", r.ExpiresAt)
	}
	return j.tok, nil
}

// TradeRefusedError is runfleet's refusal of the job token trade: 409 while
// its ledger has not seen the job start (ask again soon), 403 for a job
// description it will never serve this machine.
type TradeRefusedError struct {
	Status int
	Body   string
}

func (e *TradeRefusedError) Error() string {
	return fmt.Sprintf("runfleet refused the job token (%d): %s", e.Status, e.Body)
}

// DefaultTradeWait is how long the registration waits for its one trade:
// under the hook's curl --max-time 10, with room for its own start.
const DefaultTradeWait = 7 * time.Second

// backgroundTradeWait bounds the background trade after a 409: the
// ledger sees a job start within seconds of the runner's own start.
const backgroundTradeWait = 2 * time.Minute

// tradeRetryAfter is the wait before asking again after a 409, doubled
// up to a second.
const tradeRetryAfter = 250 * time.Millisecond

// TradeNow trades the registered job for its cache token at once, asking
// again after a 409 until ctx ends. runfleet binds the machine to the
// job's description at the first trade it sees, even one it answers 409,
// so the hook's trade binds it before any step of the job ran.
func (j *JobTokens) TradeNow(ctx context.Context) error {
	wait := tradeRetryAfter
	for {
		_, err := j.Token(ctx)
		var re *TradeRefusedError
		if err == nil || !errors.As(err, &re) || re.Status != http.StatusConflict {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

func (j *JobTokens) now() time.Time {
	if j.Now != nil {
		return j.Now()
	}
	return time.Now()
}

// maxEventFile bounds the event file the agent reads: GitHub caps webhook
// payloads at 25 MB.
const maxEventFile = 25 << 20

// jobEvent is what the agent reads of the job's event file.
type jobEvent struct {
	Repository struct {
		DefaultBranch string `json:"default_branch"`
	} `json:"repository"`
	PullRequest *struct {
		Base struct {
			Ref string `json:"ref"`
		} `json:"base"`
	} `json:"pull_request"`
}

// RegisterHandler is the local endpoint the job-started hook posts to
// (a form: repository, ref, event_name, base_ref, event_path — the job's
// GITHUB_* variables). It reads the default branch from the event file.
func RegisterHandler(j *JobTokens, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/job" {
			http.Error(w, "POST /job", http.StatusNotFound)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		env := cache.JobEnv{
			Repository: r.PostForm.Get("repository"),
			Ref:        r.PostForm.Get("ref"),
			EventName:  r.PostForm.Get("event_name"),
			BaseRef:    r.PostForm.Get("base_ref"),
		}
		ev, err := readEvent(r.PostForm.Get("event_path"))
		if err != nil {
			log.Warn("cacheagent: event file unreadable", "err", err)
		}
		env.DefaultBranch = ev.Repository.DefaultBranch
		if env.BaseRef == "" && ev.PullRequest != nil {
			env.BaseRef = ev.PullRequest.Base.Ref
		}
		if err := j.Register(env); err != nil {
			log.Warn("cacheagent: registration refused", "err", err, "repo", env.Repository, "ref", env.Ref)
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		log.Info("cacheagent: job registered", "repo", env.Repository, "ref", env.Ref, "event", env.EventName, "default_branch", env.DefaultBranch)
		// Trade once at once, before the job's first step, so that
		// runfleet binds the machine to this description: it binds at the
		// first trade it sees, whatever it answers. The job waits for that
		// one call only. A 409 (the ledger has not seen the job start) is
		// asked again in the background, so the token is likely there by
		// the first cache call without holding the job's first step. A
		// slow or unreachable runfleet does not fail the registration: the
		// first cache call trades (and binds) then.
		wait := j.TradeWait
		if wait <= 0 {
			wait = DefaultTradeWait
		}
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		_, err = j.Token(ctx)
		cancel()
		var re *TradeRefusedError
		switch {
		case errors.As(err, &re) && re.Status == http.StatusConflict:
			log.Info("cacheagent: job bound; its token is asked for again in the background", "repo", env.Repository, "ref", env.Ref)
			go func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), backgroundTradeWait)
				defer cancel()
				if err := j.TradeNow(ctx); err != nil {
					log.Warn("cacheagent: no job token after registration; the first cache call asks again", "err", err, "repo", env.Repository, "ref", env.Ref)
				}
			}()
		case err != nil:
			log.Warn("cacheagent: no job token at registration; the first cache call asks again", "err", err, "repo", env.Repository, "ref", env.Ref)
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func readEvent(path string) (jobEvent, error) {
	var ev jobEvent
	if path == "" {
		return ev, errors.New("no event_path")
	}
	f, err := os.Open(path)
	if err != nil {
		return ev, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return ev, fmt.Errorf("%s is not a regular file", path)
	}
	err = json.NewDecoder(io.LimitReader(f, maxEventFile)).Decode(&ev)
	return ev, err
}

// HookScript is the runner's job-started hook (ACTIONS_RUNNER_HOOK_JOB_STARTED
// in its .env): it tells the agent, on its local socket, which job the
// machine runs. It runs before the job's first step; it never fails the job.
func HookScript(socket string) string {
	return strings.ReplaceAll(`#!/bin/sh
# runfleet: tell the cache agent which job this machine runs. Never fails the job.
curl --silent --show-error --fail --max-time 10 --unix-socket @SOCKET@ \
	--data-urlencode "repository=${GITHUB_REPOSITORY}" \
	--data-urlencode "ref=${GITHUB_REF}" \
	--data-urlencode "event_name=${GITHUB_EVENT_NAME}" \
	--data-urlencode "base_ref=${GITHUB_BASE_REF}" \
	--data-urlencode "event_path=${GITHUB_EVENT_PATH}" \
	http://cache-agent/job >/dev/null ||
	echo "runfleet: the cache agent was not told of this job; actions/cache will miss" >&2
exit 0
`, "@SOCKET@", "'"+socket+"'")
}
