package config_test

import (
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/config"
)

func TestSpotBreakerIsReadPerPool(t *testing.T) {
	yaml := replace(t, "    max_runners: 3\n", "    max_runners: 3\n    spot_breaker:\n      interruptions: 3\n      window: 10m\n      cooldown: 1h\n")
	cfg, err := parse(t, yaml, defaultEnv())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Pools[0].SpotBreaker, (config.SpotBreaker{Interruptions: 3, Window: 10 * time.Minute, Cooldown: time.Hour}); got != want {
		t.Fatalf("spot_breaker = %+v, want %+v", got, want)
	}
}
