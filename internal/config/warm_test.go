package config_test

import (
	"testing"
	"time"
)

func TestWarmParsesWithTheDefaultPercentile(t *testing.T) {
	cases := []struct {
		name       string
		warm       string
		percentile float64
	}{
		{"percentile unset: 90", "{target_queue_time: 10s, max_idle: 20}", 90},
		{"percentile set", "{target_queue_time: 10s, percentile: 99.5, max_idle: 20}", 99.5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			yaml := replace(t, "    max_runners: 3\n", "    max_runners: 3\n    warm: "+c.warm+"\n")
			cfg, err := parse(t, yaml, defaultEnv())
			if err != nil {
				t.Fatal(err)
			}
			w := cfg.Pools[0].Warm
			if w == nil || w.TargetQueueTime != 10*time.Second || w.Percentile != c.percentile || w.MaxIdle != 20 {
				t.Fatalf("warm = %+v", w)
			}
		})
	}
}
