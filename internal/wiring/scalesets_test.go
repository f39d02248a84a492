package wiring

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/github/scaleset"
	ghsim "github.com/runfleet/runfleet/internal/github/simulated"
)

// Scale-set pools get a scale-set client per owner, minting through the
// REST client, and their runners routed through the scale set; a config
// without them keeps its GitHub port as it is.
func TestScaleSetsRouteOnlyScaleSetPools(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	cfg := &config.Config{GitHub: config.GitHub{Token: "ghp_x"}, Pools: []config.Pool{
		{Name: "hooks", Owner: "octo-org"},
		{Name: "scale-a", Owner: "octo-org", ScaleSet: &config.ScaleSet{Name: "linux-a"}},
		{Name: "scale-b", Owner: "octo-org", RunnerGroup: "ci", ScaleSet: &config.ScaleSet{Name: "linux-b"}},
	}}
	gh, err := GitHub(cfg, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	routed, pools, err := ScaleSets(cfg, gh, log)
	if err != nil {
		t.Fatal(err)
	}
	r, ok := routed.(scaleset.RoutedGitHub)
	if !ok || r.GitHub != gh || len(r.ByPool) != 2 || r.ByPool["hooks"] != nil {
		t.Fatalf("routed port %#v", routed)
	}
	if len(pools) != 2 || pools[0].Client != pools[1].Client || pools[1].RunnerGroup != "ci" || pools[1].ScaleSet != "linux-b" {
		t.Fatalf("pools %+v: want both, sharing one client for their owner", pools)
	}

	plain := &config.Config{GitHub: cfg.GitHub, Pools: cfg.Pools[:1]}
	if same, none, err := ScaleSets(plain, gh, log); err != nil || same != gh || none != nil {
		t.Fatalf("without scale-set pools: %v, %v, %v; want the port unchanged", same, none, err)
	}
	var fe *config.FieldError
	if _, _, err := ScaleSets(cfg, ghsim.New(), log); !errors.As(err, &fe) || fe.Field != "pools[1].scale_set" {
		t.Fatalf("a simulated GitHub: %v, want a field error", err)
	}
}

func TestWebURLOfTheAPIRoot(t *testing.T) {
	for in, want := range map[string]string{
		"":                                 "",
		"https://ghes.example.com/api/v3":  "https://ghes.example.com",
		"https://ghes.example.com/api/v3/": "https://ghes.example.com",
	} {
		if got := webURL(in); got != want {
			t.Errorf("webURL(%q) = %q, want %q", in, got, want)
		}
	}
}
