package metadata

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/runfleet/runfleet/internal/testclock"
)

var testKey = []byte("0123456789abcdef0123456789abcdef-test-key")

func newTestTokens(t *testing.T, key []byte, c *testclock.Clock) *Tokens {
	t.Helper()
	tok, err := NewTokens(key, "ctl-test", c.Now)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func requireRefused(t *testing.T, tokens *Tokens, raw, wantReason string) *TokenError {
	t.Helper()
	claim, err := tokens.Verify(raw)
	var te *TokenError
	if !errors.As(err, &te) || !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("Verify = %+v, %v; want a *TokenError", claim, err)
	}
	if !strings.Contains(te.Reason, wantReason) {
		t.Fatalf("refusal reason %q, want one containing %q", te.Reason, wantReason)
	}
	if raw != "" && strings.Contains(err.Error(), raw) {
		t.Fatal("the refusal error contains the token")
	}
	return te
}

func TestTokenRoundTrip(t *testing.T) {
	c := testclock.At(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	tokens := newTestTokens(t, testKey, c)
	raw, err := tokens.Mint("runfleet-linux-1-1", "linux", 2, 25*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tokens.Verify(raw)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	want := Claim{Instance: "runfleet-linux-1-1", Pool: "linux", Attempt: 2, ExpiresAt: c.Now().Add(25 * time.Minute)}
	if got.Instance != want.Instance || got.Pool != want.Pool || got.Attempt != want.Attempt || !got.ExpiresAt.Equal(want.ExpiresAt) {
		t.Fatalf("claim = %+v, want %+v", got, want)
	}

	// The wire claims are the documented ones.
	payload := decodeSegment(t, raw, 1)
	for key, want := range map[string]any{
		"sub": "runfleet-linux-1-1", "iss": "ctl-test", "aud": []any{Audience},
		"attempt": float64(2), "pool": "linux",
		"iat": float64(c.Now().Unix()), "exp": float64(c.Now().Add(25 * time.Minute).Unix()),
	} {
		if got := payload[key]; !equalJSON(got, want) {
			t.Errorf("claim %s = %v, want %v", key, got, want)
		}
	}
	if header := decodeSegment(t, raw, 0); header["alg"] != "HS256" {
		t.Errorf("alg = %v, want HS256", header["alg"])
	}
}

func TestTokenExpired(t *testing.T) {
	c := testclock.At(time.Now())
	tokens := newTestTokens(t, testKey, c)
	raw, err := tokens.Mint("runfleet-linux-1-1", "linux", 1, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute + clockSkew - time.Second)
	if _, err := tokens.Verify(raw); err != nil {
		t.Fatalf("Verify within the allowed clock skew: %v", err)
	}
	c.Advance(2 * time.Second)
	if te := requireRefused(t, tokens, raw, "expired"); !te.Expired {
		t.Fatal("TokenError.Expired is false for an expired token")
	}
}

func TestTokenIssuedInTheFutureRefused(t *testing.T) {
	c := testclock.At(time.Now())
	tokens := newTestTokens(t, testKey, c)
	raw, _ := tokens.Mint("runfleet-linux-1-1", "linux", 1, time.Hour)
	c.Advance(-time.Hour)
	requireRefused(t, tokens, raw, "future")
}

func TestTokenWrongKeyRefused(t *testing.T) {
	c := testclock.At(time.Now())
	raw, err := newTestTokens(t, []byte(strings.Repeat("k", 32)), c).Mint("runfleet-linux-1-1", "linux", 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	requireRefused(t, newTestTokens(t, testKey, c), raw, "signature")
}

func TestTokenOtherControllerRefused(t *testing.T) {
	c := testclock.At(time.Now())
	other, err := NewTokens(testKey, "ctl-other", c.Now)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := other.Mint("runfleet-linux-1-1", "linux", 1, time.Hour)
	requireRefused(t, newTestTokens(t, testKey, c), raw, "another controller")
}

// Changing any claim (here: the instance, to reach another instance's
// credentials, or the attempt) breaks the signature.
func TestTokenTamperedRefused(t *testing.T) {
	c := testclock.At(time.Now())
	tokens := newTestTokens(t, testKey, c)
	raw, _ := tokens.Mint("runfleet-linux-1-1", "linux", 1, time.Hour)
	for _, change := range []map[string]any{
		{"sub": "runfleet-linux-2-1"},
		{"attempt": 2},
		{"exp": c.Now().Add(48 * time.Hour).Unix()},
	} {
		parts := strings.Split(raw, ".")
		payload := decodeSegment(t, raw, 1)
		for k, v := range change {
			payload[k] = v
		}
		parts[1] = encodeSegment(t, payload)
		requireRefused(t, tokens, strings.Join(parts, "."), "signature")
	}
	// A flipped signature byte.
	flipped := []byte(raw)
	flipped[len(flipped)-3] ^= 0x01
	requireRefused(t, tokens, string(flipped), "")
}

// alg "none" (and any algorithm but HS256) is refused even when the token
// is otherwise well formed: the classic JWT forgery.
func TestTokenAlgNoneRefused(t *testing.T) {
	c := testclock.At(time.Now())
	tokens := newTestTokens(t, testKey, c)
	claims := instanceClaims{
		RegisteredClaims: jwt.RegisteredClaims{
			Subject: "runfleet-linux-1-1", Issuer: "ctl-test", Audience: jwt.ClaimStrings{Audience},
			IssuedAt: jwt.NewNumericDate(c.Now()), ExpiresAt: jwt.NewNumericDate(c.Now().Add(time.Hour)),
		},
		Attempt: 1, Pool: "linux",
	}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	requireRefused(t, tokens, none, "")

	hs512, err := jwt.NewWithClaims(jwt.SigningMethodHS512, claims).SignedString(testKey)
	if err != nil {
		t.Fatal(err)
	}
	requireRefused(t, tokens, hs512, "")

	// The same claims under HS256 and the right key are accepted, so the
	// refusals above are about the algorithm alone.
	hs256, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(testKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.Verify(hs256); err != nil {
		t.Fatalf("the HS256 control token was refused: %v", err)
	}
}

func TestTokenMissingClaimsRefused(t *testing.T) {
	c := testclock.At(time.Now())
	tokens := newTestTokens(t, testKey, c)
	base := func() instanceClaims {
		return instanceClaims{
			RegisteredClaims: jwt.RegisteredClaims{
				Subject: "runfleet-linux-1-1", Issuer: "ctl-test", Audience: jwt.ClaimStrings{Audience},
				IssuedAt: jwt.NewNumericDate(c.Now()), ExpiresAt: jwt.NewNumericDate(c.Now().Add(time.Hour)),
			},
			Attempt: 1, Pool: "linux",
		}
	}
	for name, edit := range map[string]func(*instanceClaims){
		"no exp":        func(ic *instanceClaims) { ic.ExpiresAt = nil },
		"no sub":        func(ic *instanceClaims) { ic.Subject = "" },
		"attempt 0":     func(ic *instanceClaims) { ic.Attempt = 0 },
		"no pool":       func(ic *instanceClaims) { ic.Pool = "" },
		"other aud":     func(ic *instanceClaims) { ic.Audience = jwt.ClaimStrings{"runfleet-api"} },
		"no aud":        func(ic *instanceClaims) { ic.Audience = nil },
		"empty subject": func(ic *instanceClaims) { ic.Subject = "" },
	} {
		ic := base()
		edit(&ic)
		raw, err := jwt.NewWithClaims(jwt.SigningMethodHS256, ic).SignedString(testKey)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tokens.Verify(raw); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s: Verify = %v, want a refusal", name, err)
		}
	}
	requireRefused(t, tokens, "", "no token")
	requireRefused(t, tokens, "not.a.jwt", "malformed")
}

func TestNewTokensRefusesShortKey(t *testing.T) {
	if _, err := NewTokens([]byte(strings.Repeat("k", MinKeyBytes-1)), "ctl", nil); err == nil {
		t.Fatal("a 31-byte key was accepted")
	}
	if _, err := NewTokens(testKey, "", nil); err == nil {
		t.Fatal("an empty controller id was accepted")
	}
}

func decodeSegment(t *testing.T, raw string, i int) map[string]any {
	t.Helper()
	data, err := base64.RawURLEncoding.DecodeString(strings.Split(raw, ".")[i])
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func encodeSegment(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(data)
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
