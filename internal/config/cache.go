package config

import "time"

// Cache is runfleet's own actions/cache service in embedded mode
// (docs/actions-cache.md): off unless Dir is set. Served by `runfleet serve`
// beside the metadata endpoints, so it needs server.public_url.
type Cache struct {
	// Dir is where entries are kept on local disk; empty: the cache is off.
	Dir string `yaml:"dir"`
	// MaxAge evicts an entry not read for this long (default 7 days,
	// GitHub's rule).
	MaxAge time.Duration `yaml:"max_age"`
	// MaxBytes evicts the least recently read entries until the cache is
	// at most this big (default 100 GiB).
	MaxBytes int64 `yaml:"max_bytes"`
	// MaxEntryBytes refuses an archive bigger than this (default 10 GiB,
	// GitHub's per-repository cap).
	MaxEntryBytes int64 `yaml:"max_entry_bytes"`
}

// Cache defaults, applied only when Dir turns the cache on.
const (
	DefaultCacheMaxAge        = 7 * 24 * time.Hour
	DefaultCacheMaxBytes      = 100 << 30
	DefaultCacheMaxEntryBytes = 10 << 30
)

func (c *Cache) applyDefaults() {
	if c.Dir == "" {
		return
	}
	setDefault(&c.MaxAge, DefaultCacheMaxAge)
	setDefault(&c.MaxBytes, DefaultCacheMaxBytes)
	setDefault(&c.MaxEntryBytes, DefaultCacheMaxEntryBytes)
}

func (c *Cache) validate(p *problems, server *Server) {
	if c.Dir == "" {
		if c.MaxAge != 0 || c.MaxBytes != 0 || c.MaxEntryBytes != 0 {
			p.add("cache", "limits are set but cache.dir is empty: set cache.dir to turn the cache on")
		}
		return
	}
	if server.PublicURL == "" {
		p.add("cache.dir", "the cache is served beside the metadata endpoints: set server.public_url, the URL runner machines reach runfleet at")
	}
	switch {
	case c.MaxAge < 0:
		p.add("cache.max_age", "%v is negative", c.MaxAge)
	case c.MaxBytes < 0:
		p.add("cache.max_bytes", "%d is negative", c.MaxBytes)
	case c.MaxEntryBytes < 0:
		p.add("cache.max_entry_bytes", "%d is negative", c.MaxEntryBytes)
	case c.MaxEntryBytes > c.MaxBytes:
		p.add("cache.max_entry_bytes", "%d is more than cache.max_bytes (%d): such an entry would be evicted at once", c.MaxEntryBytes, c.MaxBytes)
	}
}
