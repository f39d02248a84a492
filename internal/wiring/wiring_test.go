package wiring

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
)

func TestProvidersReportsEveryPoolProblemByField(t *testing.T) {
	cfg := &config.Config{Pools: []config.Pool{
		{Name: "ok", Provider: config.Provider{Type: "simulated"}},
		{Name: "cloud", Provider: config.Provider{Type: "nope"}},
		{Name: "odd", Provider: config.Provider{Type: "simulated", Settings: map[string]any{"failure_rate": 7}}},
	}}
	provs, err := Providers(cfg, "test-installation")
	if provs["ok"] == nil {
		t.Fatal("the valid pool got no provider")
	}
	var fe *config.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want *config.FieldError", err)
	}
	for _, want := range []string{`pools[1].provider.type: pool "cloud"`, `pools[2].provider.settings: pool "odd"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestGitHubNeedsAConfiguredMode(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	if gh, err := GitHub(&config.Config{GitHub: config.GitHub{Simulated: true}}, log, nil); err != nil || gh == nil {
		t.Fatalf("simulated: %v", err)
	}
	if _, err := GitHub(&config.Config{GitHub: config.GitHub{App: &config.App{ID: 1}}}, log, nil); err == nil {
		t.Fatal("app: want an error until the real client is wired")
	}
}
