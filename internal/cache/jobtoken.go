package cache

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/internal/runner"
)

// JobTokenPath is where a machine's cache agent trades its agent token and
// its job's description for the job's cache token.
const JobTokenPath = "/_cache/job-token"

// DefaultJobTokenTTL is a job cache token's life: GitHub's default job
// time limit (timeout-minutes 360), so the token expires with the job.
const DefaultJobTokenTTL = 6 * time.Hour

// Ledger says what runfleet knows of a machine's job.
type Ledger interface {
	MachineJob(ctx context.Context, instance string) (MachineJob, error)
}

// Bindings keeps each machine's binding to its job's description: the
// store's leases (store.Leases), on every store runfleet runs on.
type Bindings interface {
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration, now time.Time) (*runner.Lease, error)
}

// JobTokenOptions configure the JobTokenHandler.
type JobTokenOptions struct {
	Agents *AgentTokens
	Tokens *Tokens
	Ledger Ledger
	// Bindings bind a machine to the first well-formed job description
	// it presents (JobBinding): a later, different one is refused.
	Bindings Bindings
	TTL      time.Duration
	Now      func() time.Time
	Log      *slog.Logger
}

// JobTokenHandler serves JobTokenPath.
type JobTokenHandler struct{ o JobTokenOptions }

// JobTokenResponse is the answer: the cache token and what it allows.
type JobTokenResponse struct {
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expires_at"`
	Repo      string    `json:"repository"`
	Write     string    `json:"write,omitempty"`
	Read      []string  `json:"read"`
}

// NewJobTokenHandler checks o.
func NewJobTokenHandler(o JobTokenOptions) (*JobTokenHandler, error) {
	if o.Agents == nil || o.Tokens == nil || o.Ledger == nil || o.Bindings == nil {
		return nil, errors.New("cache: the job token handler needs agent tokens, cache tokens, a ledger and the store's leases (bindings)")
	}
	if o.TTL <= 0 {
		o.TTL = DefaultJobTokenTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &JobTokenHandler{o: o}, nil
}

func (h *JobTokenHandler) refuse(w http.ResponseWriter, log *slog.Logger, status int, reason string) {
	log.Warn("cache: job token refused", "status", status, "reason", reason)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": reason, "status": status})
}

// ServeHTTP implements http.Handler.
func (h *JobTokenHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	log := h.o.Log
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.refuse(w, log, http.StatusMethodNotAllowed, "use POST")
		return
	}
	claim, err := h.o.Agents.Verify(bearer(r))
	if err != nil {
		reason := "agent token refused"
		var te *metadata.TokenError
		if errors.As(err, &te) {
			reason += ": " + te.Reason
		}
		h.refuse(w, log, http.StatusUnauthorized, reason)
		return
	}
	log = log.With("instance", claim.Instance, "pool", claim.Pool)
	var env JobEnv
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<10)).Decode(&env); err != nil {
		h.refuse(w, log, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	if !h.bind(w, r, log, claim, env) {
		return
	}
	m, err := h.o.Ledger.MachineJob(r.Context(), claim.Instance)
	if err != nil {
		log.Error("cache: ledger read failed", "err", err)
		h.refuse(w, log, http.StatusServiceUnavailable, "the ledger could not answer; retry")
		return
	}
	job, err := DecideJob(env, m)
	if err != nil {
		var je *JobRefusedError
		status := http.StatusForbidden
		if errors.As(err, &je) && je.Retry {
			status = http.StatusConflict
		}
		h.refuse(w, log.With("repo", env.Repository), status, err.Error())
		return
	}
	g, err := GrantFor(job)
	if err != nil {
		h.refuse(w, log, http.StatusBadRequest, err.Error())
		return
	}
	ttl := min(h.o.TTL, claim.ExpiresAt.Sub(h.o.Now()))
	tok, err := h.o.Tokens.Mint(claim.Instance, g, ttl)
	if err != nil {
		h.refuse(w, log, http.StatusUnauthorized, "agent token about to expire")
		return
	}
	log.Info("cache: job token minted", "repo", g.Repo, "write", g.Write, "read", g.Read, "ttl", ttl)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(JobTokenResponse{Token: tok, ExpiresAt: h.o.Now().Add(ttl), Repo: g.Repo, Write: g.Write, Read: g.Read})
}

// bind binds the machine to env if it is the first well-formed description
// it presents, and says whether the request may go on. It runs before the
// ledger's repository check, which may answer 409 until the job's
// in_progress event is in: the job-started hook's first trade, before any
// step of the job ran, binds even when it is told to retry. The binding
// lives as long as the agent token (no other can be got once the machine
// has booted), and each trade with the same description extends it.
func (h *JobTokenHandler) bind(w http.ResponseWriter, r *http.Request, log *slog.Logger, claim AgentClaim, env JobEnv) bool {
	now := h.o.Now()
	holder := JobBinding(env)
	var acquireErr error
	if holder != "" {
		ttl := claim.ExpiresAt.Sub(now)
		if ttl <= 0 {
			h.refuse(w, log, http.StatusUnauthorized, "agent token about to expire")
			return false
		}
		_, acquireErr = h.o.Bindings.AcquireLease(r.Context(), JobBindingLease(claim.Instance), holder, ttl, now)
	}
	outcome, err := DecideBinding(env, holder, acquireErr)
	switch outcome {
	case BindRefused:
		var be *ScopeBoundError
		errors.As(err, &be)
		h.refuse(w, log.With("repo", env.Repository, "bound_ref", be.BoundRef, "ref", env.Ref, "event", env.EventName),
			http.StatusForbidden, err.Error())
		return false
	case BindFailed:
		log.Error("cache: the job binding could not be written", "err", err)
		h.refuse(w, log, http.StatusServiceUnavailable, "the store could not answer; retry")
		return false
	}
	return true
}
