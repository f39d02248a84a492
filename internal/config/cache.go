package config

import (
	"regexp"
	"time"
)

// hostNamePattern is a DNS host name: labels of letters, digits and '-'.
var hostNamePattern = regexp.MustCompile(`^([a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?\.)+[a-zA-Z]{2,63}$`)

// Cache is runfleet's own actions/cache service in embedded mode
// (docs/actions-cache.md): off unless Dir or S3 is set. Served by
// `runfleet serve` beside the metadata endpoints, so it needs
// server.public_url.
type Cache struct {
	// Dir keeps the entries on local disk.
	Dir string `yaml:"dir"`
	// S3 keeps them in a bucket instead (any S3-compatible store).
	S3 *CacheS3 `yaml:"s3"`
	// MaxAge evicts an entry not read for this long (default 7 days,
	// GitHub's rule).
	MaxAge time.Duration `yaml:"max_age"`
	// MaxBytes evicts the least recently read entries until the cache is
	// at most this big (default 100 GiB).
	MaxBytes int64 `yaml:"max_bytes"`
	// MaxEntryBytes refuses an archive bigger than this (default 10 GiB,
	// GitHub's per-repository cap).
	MaxEntryBytes int64 `yaml:"max_entry_bytes"`
	// EvictEvery is how often the AWS stack's reconciler function scans
	// the cache's index to evict by size and age (default 10 minutes): a
	// scan reads the whole index, so it runs at most this often however
	// often the reconciler ticks. serve evicts from memory every 5 minutes.
	EvictEvery time.Duration `yaml:"evict_every"`
	// Pools are the pools whose machines run the cache agent
	// (`runfleet cache-agent`), which points the jobs' actions/cache at
	// this cache. Empty: the cache is served, no machine uses it.
	Pools []string `yaml:"pools"`
	// ResultsHosts are the hosts of GitHub's results service the agent
	// answers for (default: github.com's).
	ResultsHosts []string `yaml:"results_hosts"`
}

// ForPool says whether pool's machines run the cache agent.
func (c *Cache) ForPool(pool string) bool {
	if !c.On() {
		return false
	}
	for _, p := range c.Pools {
		if p == pool {
			return true
		}
	}
	return false
}

// CacheS3 names the bucket the cache keeps its entries in. Credentials
// come from the AWS SDK's usual chain (environment, profile, instance role).
type CacheS3 struct {
	Bucket string `yaml:"bucket"`
	// Prefix is prepended to every object key (e.g. "cache/").
	Prefix string `yaml:"prefix"`
	// Region of the bucket; empty: the SDK's (AWS_REGION, the profile).
	Region string `yaml:"region"`
	// Endpoint of an S3-compatible store (MinIO, Ceph, moto); empty: AWS.
	Endpoint string `yaml:"endpoint"`
	// PathStyle addresses the bucket in the path, as most S3-compatible
	// stores need.
	PathStyle bool `yaml:"path_style"`
}

// On says whether the cache is served.
func (c *Cache) On() bool { return c.Dir != "" || c.S3 != nil }

// Cache defaults, applied only when the cache is on.
const (
	DefaultCacheMaxAge        = 7 * 24 * time.Hour
	DefaultCacheMaxBytes      = 100 << 30
	DefaultCacheMaxEntryBytes = 10 << 30
	DefaultCacheEvictEvery    = 10 * time.Minute
)

func (c *Cache) applyDefaults() {
	if !c.On() {
		return
	}
	setDefault(&c.MaxAge, DefaultCacheMaxAge)
	setDefault(&c.MaxBytes, DefaultCacheMaxBytes)
	setDefault(&c.MaxEntryBytes, DefaultCacheMaxEntryBytes)
	setDefault(&c.EvictEvery, DefaultCacheEvictEvery)
	if len(c.ResultsHosts) == 0 {
		c.ResultsHosts = []string{DefaultResultsHost}
	}
}

// DefaultResultsHost is github.com's results service, ACTIONS_RESULTS_URL's
// host for every job there.
const DefaultResultsHost = "results-receiver.actions.githubusercontent.com"

func (c *Cache) validate(p *problems, server *Server, pools []Pool) {
	for _, name := range c.Pools {
		found := false
		for _, pl := range pools {
			found = found || pl.Name == name
		}
		if !found {
			p.add("cache.pools", "%q is not a pool", name)
		}
	}
	for _, h := range c.ResultsHosts {
		if !hostNamePattern.MatchString(h) {
			p.add("cache.results_hosts", "%q is not a host name", h)
		}
	}
	if !c.On() {
		if c.MaxAge != 0 || c.MaxBytes != 0 || c.MaxEntryBytes != 0 || c.EvictEvery != 0 || len(c.Pools) != 0 || len(c.ResultsHosts) != 0 {
			p.add("cache", "limits or pools are set but neither cache.dir nor cache.s3 is: set one to turn the cache on")
		}
		return
	}
	if server.PublicURL == "" {
		p.add("cache", "the cache is served beside the metadata endpoints: set server.public_url, the URL runner machines reach runfleet at")
	}
	if c.Dir != "" && c.S3 != nil {
		p.add("cache", "set one of cache.dir (local disk) and cache.s3 (a bucket), not both")
	}
	if c.S3 != nil {
		if c.S3.Bucket == "" {
			p.add("cache.s3.bucket", "required")
		}
		if c.S3.Endpoint != "" {
			checkHTTPURL(p, "cache.s3.endpoint", c.S3.Endpoint)
		}
	}
	switch {
	case c.MaxAge < 0:
		p.add("cache.max_age", "%v is negative", c.MaxAge)
	case c.MaxBytes < 0:
		p.add("cache.max_bytes", "%d is negative", c.MaxBytes)
	case c.MaxEntryBytes < 0:
		p.add("cache.max_entry_bytes", "%d is negative", c.MaxEntryBytes)
	case c.EvictEvery < time.Minute:
		p.add("cache.evict_every", "%v is under a minute: the reconciler function ticks once a minute at most, and each run scans the whole index", c.EvictEvery)
	case c.MaxEntryBytes > c.MaxBytes:
		p.add("cache.max_entry_bytes", "%d is more than cache.max_bytes (%d): such an entry would be evicted at once", c.MaxEntryBytes, c.MaxBytes)
	}
}
