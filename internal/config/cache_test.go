package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/config"
)

func TestCacheSection(t *testing.T) {
	const public = "\nserver:\n  public_url: https://runfleet.example.com\n"
	tests := []struct {
		name    string
		yaml    string
		wantErr string // "" when valid
		check   func(*testing.T, config.Cache)
	}{
		{"off by default", "", "", func(t *testing.T, c config.Cache) {
			if c != (config.Cache{}) {
				t.Errorf("cache = %+v, want off with no defaults", c)
			}
		}},
		{"on with defaults", public + "cache:\n  dir: /var/cache/runfleet\n", "", func(t *testing.T, c config.Cache) {
			if c.MaxAge != 7*24*time.Hour || c.MaxBytes != config.DefaultCacheMaxBytes || c.MaxEntryBytes != config.DefaultCacheMaxEntryBytes {
				t.Errorf("cache = %+v, want the defaults", c)
			}
		}},
		{"needs a public URL", "cache:\n  dir: /var/cache/runfleet\n", "cache.dir: the cache is served beside the metadata endpoints", nil},
		{"limits without a dir", "cache:\n  max_age: 1h\n", "cache: limits are set but cache.dir is empty", nil},
		{"negative age", public + "cache:\n  dir: /c\n  max_age: -1h\n", "cache.max_age: -1h0m0s is negative", nil},
		{"entry bigger than the cache", public + "cache:\n  dir: /c\n  max_bytes: 10\n  max_entry_bytes: 11\n", "cache.max_entry_bytes: 11 is more than cache.max_bytes (10)", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parse(t, validYAML+tt.yaml, defaultEnv())
			if tt.wantErr != "" {
				if msgs := strings.Join(messages(t, err), "\n"); !strings.Contains(msgs, tt.wantErr) {
					t.Fatalf("errors = %q, want one containing %q", msgs, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, cfg.Cache)
		})
	}
}
