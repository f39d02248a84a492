package cache

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/runfleet/runfleet/internal/metadata"
)

// AgentAudience is the aud claim of a cache agent token: what the machine's
// cache agent gets at boot (while its instance token still works) and later
// trades, with what the job-started hook told it, for the job's cache token.
const AgentAudience = "runfleet-cache-agent"

// DefaultAgentTokenTTL is how long an agent token lives: a machine waits
// idle, then runs one job (GitHub's default time limit, 6 h). The ledger
// check at every trade ends it sooner: a deleted machine trades nothing.
const DefaultAgentTokenTTL = 24 * time.Hour

// AgentClaim is what a verified agent token says.
type AgentClaim struct {
	Instance  string
	Pool      string
	ExpiresAt time.Time
}

type agentClaims struct {
	jwt.RegisteredClaims
	Pool string `json:"pool"`
}

func (c agentClaims) Validate() error {
	if c.Subject == "" {
		return errors.New("no instance (sub)")
	}
	return nil
}

// AgentTokens mints and verifies agent tokens (their own audience, the
// instance token key).
type AgentTokens struct{ signer *metadata.Signer }

// NewAgentTokens returns AgentTokens signing with key.
func NewAgentTokens(key []byte, controllerID string, now func() time.Time) (*AgentTokens, error) {
	s, err := metadata.NewSigner(key, controllerID, AgentAudience, "cache agent token", now)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return &AgentTokens{signer: s}, nil
}

// Mint returns an agent token for instance of pool.
func (t *AgentTokens) Mint(instance, pool string, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		return "", fmt.Errorf("cache: agent token ttl %v is not positive", ttl)
	}
	return t.signer.Sign(agentClaims{RegisteredClaims: t.signer.Registered(instance, AgentAudience, ttl), Pool: pool})
}

// Verify checks an agent token; failures are *metadata.TokenError.
func (t *AgentTokens) Verify(raw string) (AgentClaim, error) {
	var c agentClaims
	if err := t.signer.Parse(raw, &c); err != nil {
		return AgentClaim{}, err
	}
	return AgentClaim{Instance: c.Subject, Pool: c.Pool, ExpiresAt: c.ExpiresAt.Time}, nil
}
