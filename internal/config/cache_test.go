package config_test

import (
	"reflect"
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
			if !reflect.DeepEqual(c, config.Cache{}) {
				t.Errorf("cache = %+v, want off with no defaults", c)
			}
		}},
		{"on with defaults", public + "cache:\n  dir: /var/cache/runfleet\n", "", func(t *testing.T, c config.Cache) {
			if len(c.ResultsHosts) != 1 || c.ResultsHosts[0] != config.DefaultResultsHost {
				t.Errorf("results hosts = %v", c.ResultsHosts)
			}
			if c.MaxAge != 7*24*time.Hour || c.MaxBytes != config.DefaultCacheMaxBytes || c.MaxEntryBytes != config.DefaultCacheMaxEntryBytes {
				t.Errorf("cache = %+v, want the defaults", c)
			}
		}},
		{"needs a public URL", "cache:\n  dir: /var/cache/runfleet\n", "cache: the cache is served beside the metadata endpoints", nil},
		{"limits without a store", "cache:\n  max_age: 1h\n", "cache: limits or pools are set but neither cache.dir nor cache.s3 is", nil},
		{"on S3", public + "cache:\n  s3: {bucket: b, prefix: c/, endpoint: 'http://127.0.0.1:9000', path_style: true}\n", "", func(t *testing.T, c config.Cache) {
			if c.S3 == nil || c.S3.Bucket != "b" || !c.S3.PathStyle || c.MaxBytes != config.DefaultCacheMaxBytes {
				t.Errorf("cache = %+v", c)
			}
		}},
		{"S3 needs a bucket", public + "cache:\n  s3: {prefix: c/}\n", "cache.s3.bucket: required", nil},
		{"disk or S3, not both", public + "cache:\n  dir: /c\n  s3: {bucket: b}\n", "cache: set one of cache.dir", nil},
		{"negative age", public + "cache:\n  dir: /c\n  max_age: -1h\n", "cache.max_age: -1h0m0s is negative", nil},
		{"pools opt in", public + "cache:\n  dir: /c\n  pools: [" + "linux-x64" + "]\n", "", func(t *testing.T, c config.Cache) {
			if !c.ForPool("linux-x64") || c.ForPool("other") {
				t.Errorf("cache = %+v", c)
			}
		}},
		{"results hosts", public + "cache:\n  dir: /c\n  results_hosts: [results-receiver.actions.example.ghe.com]\n", "", func(t *testing.T, c config.Cache) {
			if len(c.ResultsHosts) != 1 || c.ResultsHosts[0] != "results-receiver.actions.example.ghe.com" {
				t.Errorf("cache = %+v", c)
			}
		}},
		{"a bad results host", public + "cache:\n  dir: /c\n  results_hosts: ['http://x/']\n", `cache.results_hosts: "http://x/" is not a host name`, nil},
		{"an unknown pool", public + "cache:\n  dir: /c\n  pools: [nope]\n", `cache.pools: "nope" is not a pool`, nil},
		{"pools without a store", "cache:\n  pools: [" + "linux-x64" + "]\n", "cache: limits or pools are set but neither", nil},
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
