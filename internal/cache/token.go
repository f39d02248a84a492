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
// the cache, the separation metadata.Audience was made for.
const Audience = "runfleet-cache"

// clockSkew is how far the minting and the verifying clock may disagree.
const clockSkew = 30 * time.Second

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
// one repository and the scopes its job may read and write. It never logs
// a token or the key. Safe for concurrent use.
type Tokens struct {
	key    []byte
	issuer string
	now    func() time.Time
	parser *jwt.Parser
}

// NewTokens returns Tokens signing with key (at least
// metadata.MinKeyBytes) and naming controllerID as issuer.
func NewTokens(key []byte, controllerID string, now func() time.Time) (*Tokens, error) {
	if len(key) < metadata.MinKeyBytes {
		return nil, fmt.Errorf("cache: token key is %d bytes, want at least %d", len(key), metadata.MinKeyBytes)
	}
	if controllerID == "" {
		return nil, errors.New("cache: tokens need a controller id (their issuer)")
	}
	if now == nil {
		now = time.Now
	}
	t := &Tokens{key: append([]byte(nil), key...), issuer: controllerID, now: now}
	t.parser = jwt.NewParser(
		// Only HS256, whose check is a constant-time HMAC comparison.
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithAudience(Audience),
		jwt.WithIssuer(controllerID),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(clockSkew),
		jwt.WithTimeFunc(func() time.Time { return t.now() }),
		jwt.WithStrictDecoding(),
	)
	return t, nil
}

// Mint returns a token for instance's job with grant g, valid for ttl: the
// job's time limit, so the token expires with the job.
func (t *Tokens) Mint(instance string, g Grant, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		return "", fmt.Errorf("cache: token ttl %v is not positive", ttl)
	}
	now := t.now()
	c := cacheClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   instance,
			Issuer:    t.issuer,
			Audience:  jwt.ClaimStrings{Audience},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		RepoID: g.RepoID, Repo: g.Repo, Write: g.Write, Read: g.Read,
	}
	if err := c.Validate(); err != nil {
		return "", fmt.Errorf("cache: mint token: %w", err)
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(t.key)
}

// ErrToken is matched by every refused token.
var ErrToken = errors.New("cache: token refused")

// TokenError is a refused token; Reason never contains the token.
type TokenError struct {
	Reason string
	Err    error
}

func (e *TokenError) Error() string {
	if e.Err != nil {
		return "cache: token refused: " + e.Reason + ": " + e.Err.Error()
	}
	return "cache: token refused: " + e.Reason
}

func (e *TokenError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrToken) true.
func (e *TokenError) Is(target error) bool { return target == ErrToken }

// Verify checks a token and returns its claim; failures are *TokenError.
func (t *Tokens) Verify(raw string) (Claim, error) {
	if raw == "" {
		return Claim{}, &TokenError{Reason: "no token"}
	}
	var c cacheClaims
	_, err := t.parser.ParseWithClaims(raw, &c, func(*jwt.Token) (any, error) { return t.key, nil })
	if err != nil {
		reason := "invalid"
		switch {
		case errors.Is(err, jwt.ErrTokenExpired):
			reason = "expired"
		case errors.Is(err, jwt.ErrTokenSignatureInvalid):
			reason = "bad signature"
		case errors.Is(err, jwt.ErrTokenInvalidAudience):
			reason = "not a cache token"
		}
		return Claim{}, &TokenError{Reason: reason, Err: err}
	}
	return Claim{
		Grant:     Grant{RepoID: c.RepoID, Repo: c.Repo, Write: c.Write, Read: c.Read},
		Instance:  c.Subject,
		ExpiresAt: c.ExpiresAt.Time,
	}, nil
}
