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

// Tokens mints and verifies instance tokens: HS256 JWTs naming one instance
// and its create attempt. It holds the signing key; it never logs a token
// or the key. Safe for concurrent use.
type Tokens struct {
	key    []byte
	issuer string
	now    func() time.Time
	parser *jwt.Parser
}

// NewTokens returns Tokens signing with key (at least MinKeyBytes) and
// naming controllerID as issuer. now defaults to time.Now.
func NewTokens(key []byte, controllerID string, now func() time.Time) (*Tokens, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("metadata: instance token key is %d bytes, want at least %d", len(key), MinKeyBytes)
	}
	if controllerID == "" {
		return nil, errors.New("metadata: instance tokens need a controller id (their issuer)")
	}
	if now == nil {
		now = time.Now
	}
	t := &Tokens{key: append([]byte(nil), key...), issuer: controllerID, now: now}
	t.parser = jwt.NewParser(
		// Only HS256: a token naming "none", another HMAC size or an
		// asymmetric algorithm is refused before any key is looked at.
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

// Mint returns a token for one create attempt of instance in pool, valid
// for ttl (the pool's bootstrap timeout plus a margin).
func (t *Tokens) Mint(instance, pool string, attempt int, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		return "", fmt.Errorf("metadata: token ttl %v is not positive", ttl)
	}
	now := t.now()
	claims := instanceClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   instance,
			Issuer:    t.issuer,
			Audience:  jwt.ClaimStrings{Audience},
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(now.Add(ttl)),
		},
		Attempt: attempt,
		Pool:    pool,
	}
	if err := claims.Validate(); err != nil {
		return "", fmt.Errorf("metadata: mint token: %w", err)
	}
	signed, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(t.key)
	if err != nil {
		return "", fmt.Errorf("metadata: sign token for %s: %w", instance, err)
	}
	return signed, nil
}

// Verify checks a token's signature (a constant-time HMAC comparison), its
// algorithm, issuer, audience, issue and expiry times and its claims, and
// returns what it names. Every failure is a *TokenError.
func (t *Tokens) Verify(raw string) (Claim, error) {
	if raw == "" {
		return Claim{}, &TokenError{Reason: "no token"}
	}
	var claims instanceClaims
	_, err := t.parser.ParseWithClaims(raw, &claims, func(tok *jwt.Token) (any, error) {
		if tok.Method != jwt.SigningMethodHS256 {
			return nil, fmt.Errorf("algorithm %v is not HS256", tok.Header["alg"])
		}
		return t.key, nil
	})
	if err != nil {
		return Claim{}, tokenError(err)
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
		{jwt.ErrTokenInvalidAudience, "not meant for the metadata endpoints"},
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
