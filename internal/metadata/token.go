package metadata

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
)

// Audience is the aud claim of every instance token: a token minted for
// the metadata endpoints is good for nothing else that shares the key.
const Audience = "runfleet-metadata"

// MinKeyBytes is the shortest signing key accepted: HS256's own output size,
// below which the key, not the hash, is the weak part.
const MinKeyBytes = 32

// clockSkew is how far the minting and the verifying clock may disagree
// (two Lambda functions, or a restart between mint and use).
const clockSkew = 30 * time.Second

// Claim is what a verified instance token says: which instance, of which
// pool, in which create attempt, until when.
type Claim struct {
	Instance  string
	Pool      string
	Attempt   int
	ExpiresAt time.Time
}

// instanceClaims is the token's payload: the registered claims (sub = the
// instance name, iss = the controller id, aud, iat, exp) plus the create
// attempt and the pool.
type instanceClaims struct {
	jwt.RegisteredClaims
	Attempt int    `json:"attempt"`
	Pool    string `json:"pool"`
}

// Validate is called by the parser after the registered claims check out.
func (c instanceClaims) Validate() error {
	switch {
	case c.Subject == "":
		return errors.New("no instance (sub)")
	case c.Attempt < 1:
		return fmt.Errorf("create attempt %d is not positive", c.Attempt)
	case c.Pool == "":
		return errors.New("no pool")
	case !utf8.ValidString(c.Subject) || !utf8.ValidString(c.Pool):
		// JSON would carry U+FFFD instead: the token would name another
		// instance or pool than the one it was minted for.
		return errors.New("instance or pool is not valid UTF-8")
	}
	return nil
}

// Signer is the HS256 machinery runfleet's tokens share: instance tokens
// here, cache tokens in internal/cache. Each kind has its own audience, so a
// token of one kind is refused by the other's verifier even when both are
// signed with the same key. It holds the key and never logs it or a token.
// Safe for concurrent use.
type Signer struct {
	key    []byte
	issuer string
	now    func() time.Time
	parser *jwt.Parser
}

// NewSigner returns a Signer with key (at least MinKeyBytes), naming
// controllerID as issuer and accepting only audience. now defaults to
// time.Now. what names the token kind in errors.
func NewSigner(key []byte, controllerID, audience, what string, now func() time.Time) (*Signer, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("%s key is %d bytes, want at least %d", what, len(key), MinKeyBytes)
	}
	if controllerID == "" {
		return nil, fmt.Errorf("%ss need a controller id (their issuer)", what)
	}
	if now == nil {
		now = time.Now
	}
	s := &Signer{key: append([]byte(nil), key...), issuer: controllerID, now: now}
	s.parser = jwt.NewParser(
		// Only HS256: a token naming "none", another HMAC size or an
		// asymmetric algorithm is refused before any key is looked at.
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithAudience(audience),
		jwt.WithIssuer(controllerID),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(clockSkew),
		jwt.WithTimeFunc(func() time.Time { return s.now() }),
		jwt.WithStrictDecoding(),
	)
	return s, nil
}

// Registered returns the registered claims of a token minted now for
// subject, valid for ttl.
func (s *Signer) Registered(subject, audience string, ttl time.Duration) jwt.RegisteredClaims {
	now := s.now()
	return jwt.RegisteredClaims{
		Subject:   subject,
		Issuer:    s.issuer,
		Audience:  jwt.ClaimStrings{audience},
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
	}
}

// Sign signs claims with HS256.
func (s *Signer) Sign(claims jwt.Claims) (string, error) {
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.key)
}

// Parse checks raw's signature (a constant-time HMAC comparison), its
// algorithm, issuer, audience, issue and expiry times and claims' own
// Validate, filling claims. Every failure is a *TokenError.
func (s *Signer) Parse(raw string, claims jwt.Claims) error {
	if raw == "" {
		return &TokenError{Reason: "no token"}
	}
	_, err := s.parser.ParseWithClaims(raw, claims, func(tok *jwt.Token) (any, error) {
		if tok.Method != jwt.SigningMethodHS256 {
			return nil, fmt.Errorf("algorithm %v is not HS256", tok.Header["alg"])
		}
		return s.key, nil
	})
	if err != nil {
		return tokenError(err)
	}
	return nil
}

// Tokens mints and verifies instance tokens: HS256 JWTs naming one instance
// and its create attempt. Safe for concurrent use.
type Tokens struct {
	signer *Signer
}

// NewTokens returns Tokens signing with key (at least MinKeyBytes) and
// naming controllerID as issuer. now defaults to time.Now.
func NewTokens(key []byte, controllerID string, now func() time.Time) (*Tokens, error) {
	s, err := NewSigner(key, controllerID, Audience, "instance token", now)
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	return &Tokens{signer: s}, nil
}

// Mint returns a token for one create attempt of instance in pool, valid
// for ttl (the pool's bootstrap timeout plus a margin).
func (t *Tokens) Mint(instance, pool string, attempt int, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		return "", fmt.Errorf("metadata: token ttl %v is not positive", ttl)
	}
	claims := instanceClaims{
		RegisteredClaims: t.signer.Registered(instance, Audience, ttl),
		Attempt:          attempt,
		Pool:             pool,
	}
	if err := claims.Validate(); err != nil {
		return "", fmt.Errorf("metadata: mint token: %w", err)
	}
	signed, err := t.signer.Sign(claims)
	if err != nil {
		return "", fmt.Errorf("metadata: sign token for %s: %w", instance, err)
	}
	return signed, nil
}

// Verify checks a token's signature (a constant-time HMAC comparison), its
// algorithm, issuer, audience, issue and expiry times and its claims, and
// returns what it names. Every failure is a *TokenError.
func (t *Tokens) Verify(raw string) (Claim, error) {
	var claims instanceClaims
	if err := t.signer.Parse(raw, &claims); err != nil {
		return Claim{}, err
	}
	return Claim{
		Instance:  claims.Subject,
		Pool:      claims.Pool,
		Attempt:   claims.Attempt,
		ExpiresAt: claims.ExpiresAt.Time,
	}, nil
}

// ErrInvalidToken is matched by every *TokenError.
var ErrInvalidToken = errors.New("metadata: invalid instance token")

// TokenError is a token that was refused. Reason is safe to show the caller
// and to log: it never contains the token.
type TokenError struct {
	Reason string
	// Expired is set when the only thing wrong is that the token's time is up.
	Expired bool
	Err     error
}

func (e *TokenError) Error() string {
	if e.Err != nil {
		return "metadata: instance token refused: " + e.Reason + ": " + e.Err.Error()
	}
	return "metadata: instance token refused: " + e.Reason
}

func (e *TokenError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInvalidToken) true.
func (e *TokenError) Is(target error) bool { return target == ErrInvalidToken }

// tokenError names the first problem the parser found in words an operator
// reading a refusal log can act on.
func tokenError(err error) *TokenError {
	reasons := []struct {
		is     error
		reason string
	}{
		{jwt.ErrTokenMalformed, "malformed"},
		{jwt.ErrTokenSignatureInvalid, "bad signature (another key, or altered)"},
		{jwt.ErrTokenUnverifiable, "unverifiable (wrong algorithm)"},
		{jwt.ErrTokenExpired, "expired"},
		{jwt.ErrTokenUsedBeforeIssued, "issued in the future"},
		{jwt.ErrTokenInvalidIssuer, "issued by another controller"},
		{jwt.ErrTokenInvalidAudience, "another kind of token (its audience is not this one's)"},
		{jwt.ErrTokenRequiredClaimMissing, "missing a required claim"},
		{jwt.ErrTokenInvalidClaims, "invalid claims"},
	}
	for _, r := range reasons {
		if errors.Is(err, r.is) {
			return &TokenError{Reason: r.reason, Expired: r.is == jwt.ErrTokenExpired, Err: err}
		}
	}
	return &TokenError{Reason: "invalid", Err: err}
}
