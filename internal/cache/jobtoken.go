package cache

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/runfleet/runfleet/internal/metadata"
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

// JobTokenOptions configure the JobTokenHandler.
type JobTokenOptions struct {
	Agents *AgentTokens
	Tokens *Tokens
	Ledger Ledger
	TTL    time.Duration
	Now    func() time.Time
	Log    *slog.Logger
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
	if o.Agents == nil || o.Tokens == nil || o.Ledger == nil {
		return nil, errors.New("cache: the job token handler needs agent tokens, cache tokens and a ledger")
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
