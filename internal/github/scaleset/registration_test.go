package scaleset_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/github"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	"github.com/runfleet/runfleet/internal/github/scaleset/scalesettest"
)

// The admin token is renewed before it expires, reusing the registration
// token while it lasts: renewal costs a registration call, not a mint.
func TestAdminTokenRenewedBeforeExpiryWithoutMinting(t *testing.T) {
	w := newWorld(t, scalesettest.Options{AdminTokenTTL: 10 * time.Minute})
	if _, err := w.client.RunnerGroupByName(w.ctx, ""); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		advance              time.Duration
		mints, registrations int
	}{
		{0, 1, 1},                // first call registers
		{5 * time.Minute, 1, 1},  // token still good: nothing
		{4 * time.Minute, 1, 2},  // 1 min before expiry (< 2 min margin): renewed, same registration token
		{9 * time.Minute, 1, 3},  // again at 18 min
		{40 * time.Minute, 2, 4}, // 58 min: the registration token is within its margin: minted anew
	}
	for i, s := range steps {
		w.fake.Advance(s.advance)
		if _, err := w.client.RunnerGroupByName(w.ctx, ""); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := w.fake.Mints(); got != s.mints {
			t.Errorf("step %d: %d mints, want %d", i, got, s.mints)
		}
		if got := w.fake.Count(scalesettest.OpRegister); got != s.registrations {
			t.Errorf("step %d: %d registrations, want %d", i, got, s.registrations)
		}
	}
}

// An admin token the service refuses early (401) is dropped, the client
// registers again and the call goes once more.
func TestAdminTokenRefusedReregistersOnce(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	set := w.scaleSet(t, "linux")
	w.fake.ExpireAdminTokens()
	if _, err := w.client.ScaleSetByID(w.ctx, set.ID); err != nil {
		t.Fatalf("after the admin token expired: %v", err)
	}
	if got := w.fake.Count(scalesettest.OpRegister); got != 2 {
		t.Errorf("%d registrations, want 2", got)
	}
	if got := w.fake.Mints(); got != 1 {
		t.Errorf("%d mints, want 1 (the registration token is reused)", got)
	}
}

// A cached registration token that registration refuses is replaced by a
// new one, once.
func TestRevokedRegistrationTokenMintsAgain(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	w.scaleSet(t, "linux")
	w.fake.RevokeRegistrationTokens()
	w.fake.ExpireAdminTokens()
	if _, err := w.client.RunnerGroupByName(w.ctx, ""); err != nil {
		t.Fatal(err)
	}
	if got := w.fake.Mints(); got != 2 {
		t.Errorf("%d mints, want 2", got)
	}
}

// Registration uses the RemoteAuth scheme; every other call a Bearer token,
// and every Actions-service call the api-version (the fake refuses calls
// without it).
func TestAuthSchemes(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	m := w.session(t, w.scaleSet(t, "linux"))
	if _, err := m.GetMessage(w.ctx, 0, 1); err != nil {
		t.Fatal(err)
	}
	for _, c := range w.fake.Calls() {
		want := "Bearer"
		if c.Op == scalesettest.OpRegister {
			want = "RemoteAuth"
		}
		if c.AuthScheme != want {
			t.Errorf("%s %s: scheme %q, want %q", c.Method, c.Path, c.AuthScheme, want)
		}
		if c.Status >= 400 {
			t.Errorf("%s %s: answered %d", c.Method, c.Path, c.Status)
		}
	}
}

func TestNewValidatesConfig(t *testing.T) {
	fake := scalesettest.New(t, scalesettest.Options{})
	for name, mutate := range map[string]func(*scaleset.Config){
		"no tokens": func(c *scaleset.Config) { c.Tokens = nil },
		"no owner":  func(c *scaleset.Config) { c.Owner.Org = "" },
		"bad url":   func(c *scaleset.Config) { c.GitHubURL = "github.com" },
	} {
		cfg := fake.Config()
		mutate(&cfg)
		if _, err := scaleset.New(cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

// An admin token refused again after re-registering is ErrUnauthorized,
// after exactly one re-registration.
func TestAdminTokenRefusedTwiceIsUnauthorized(t *testing.T) {
	w := newWorld(t, scalesettest.Options{})
	set := w.scaleSet(t, "linux")
	w.fake.FailNext(scalesettest.OpGetScaleSet, 401, 2)
	_, err := w.client.ScaleSetByID(w.ctx, set.ID)
	wantKind(t, err, scaleset.ErrUnauthorized)
	if got := w.fake.Count(scalesettest.OpRegister); got != 2 {
		t.Errorf("%d registrations, want 2", got)
	}
}

// A registration token source's own error comes back unchanged inside.
func TestTokenSourceErrorIsKept(t *testing.T) {
	fake := scalesettest.New(t, scalesettest.Options{})
	cfg := fake.Config()
	cfg.Tokens = failingTokens{}
	c, err := scaleset.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.RunnerGroupByName(t.Context(), "")
	if !errors.Is(err, errNoInstallation) {
		t.Errorf("%v: want the source's error", err)
	}
}

var errNoInstallation = errors.New("no installation")

type failingTokens struct{}

func (failingTokens) RegistrationToken(context.Context, github.Owner) (scaleset.RegistrationToken, error) {
	return scaleset.RegistrationToken{}, errNoInstallation
}
