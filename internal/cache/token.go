package cache

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/runfleet/runfleet/internal/metadata"
)

// Audience is the aud claim of every cache token. Cache tokens may be
// signed with the instance-token key: the audience keeps a cache token
// from opening the metadata endpoints and an instance token from opening
// the cache, the separation metadata.Signer is built on.
const Audience = "runfleet-cache"

// maxReadScopes bounds a token's read list: GrantFor makes at most three.
const maxReadScopes = 8

// Claim is what a verified cache token says.
type Claim struct {
	Grant
	// Instance is the machine the token was minted for, for logs.
	Instance  string
	ExpiresAt time.Time
}

type cacheClaims struct {
	jwt.RegisteredClaims
	RepoID int64    `json:"repo_id"`
	Repo   string   `json:"repo,omitempty"`
	Write  string   `json:"write,omitempty"`
	Read   []string `json:"read"`
}

// Validate is called by the parser after the registered claims check out.
func (c cacheClaims) Validate() error {
	switch {
	case c.Subject == "":
		return errors.New("no instance (sub)")
	case c.RepoID <= 0:
		return errors.New("no repository")
	case len(c.Read) == 0 || len(c.Read) > maxReadScopes:
		return fmt.Errorf("%d read scopes", len(c.Read))
	case c.Write != "" && !strings.HasPrefix(c.Write, "refs/"):
		return errors.New("write scope is not a ref")
	}
	return nil
}

// Tokens mints and verifies cache tokens: HS256 JWTs naming one machine,
// one repository and the scopes its job may read and write, made by the
// same machinery as instance tokens (metadata.Signer). Safe for
// concurrent use.
type Tokens struct {
	signer *metadata.Signer
}

// NewTokens returns Tokens signing with key (at least
// metadata.MinKeyBytes) and naming controllerID as issuer.
func NewTokens(key []byte, controllerID string, now func() time.Time) (*Tokens, error) {
	s, err := metadata.NewSigner(key, controllerID, Audience, "cache token", now)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	return &Tokens{signer: s}, nil
}

// Mint returns a token for instance's job with grant g, valid for ttl: the
// job's time limit, so the token expires with the job.
func (t *Tokens) Mint(instance string, g Grant, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		return "", fmt.Errorf("cache: token ttl %v is not positive", ttl)
	}
	c := cacheClaims{
		RegisteredClaims: t.signer.Registered(instance, Audience, ttl),
		RepoID:           g.RepoID, Repo: g.Repo, Write: g.Write, Read: g.Read,
	}
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("cache: mint token: %w", err)
	}
	return t.signer.Sign(c)
}

// Verify checks a token and returns its claim; every failure is a
// *metadata.TokenError, whose Reason is safe to show and log.
func (t *Tokens) Verify(raw string) (Claim, error) {
	var c cacheClaims
	if err := t.signer.Parse(raw, &c); err != nil {
		return Claim{}, err
	}
	return Claim{
		Grant:     Grant{RepoID: c.RepoID, Repo: c.Repo, Write: c.Write, Read: c.Read},
		Instance:  c.Subject,
		ExpiresAt: c.ExpiresAt.Time,
	}, nil
}
