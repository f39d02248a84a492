package lambdafn

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/runfleet/runfleet/internal/cache"
	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/runner"
)

// metadataCache is runfleet's actions/cache served by the metadata
// function (docs/actions-cache.md, "On AWS"): the agents' token trade, the
// three twirp calls, and the presign and completion of the parts the
// machine's agent uploads straight to the bucket. The index is the stack's
// cache table (cache.Dynamo), shared by every instance of the function; no
// byte of an archive passes through the function.
type metadataCache struct {
	handler   *cache.Handler
	jobTokens *cache.JobTokenHandler
	agents    *cache.AgentTokens
	pools     func(pool string) bool
	public    string
	results   []string
	// metrics counts the handler's lookups and bytes since the execution
	// environment started; each invocation records its own difference.
	metrics *cache.Metrics
}

// ErrCacheEnvironment is a config that turns the cache on in a function
// whose stack has no cache table or bucket, or names another bucket.
var ErrCacheEnvironment = errors.New("lambdafn: the config's cache section does not match the stack's cache")

// CacheStore is the stack's actions/cache index and bucket (cache.Dynamo),
// nil when the config's cache is off. The stack gives the function its
// table and bucket (CacheBucketMaxAgeDays > 0); the config turns the cache
// on with cache.s3 naming that bucket. A config the stack cannot serve is
// an ErrCacheEnvironment naming the fix.
func CacheStore(app *App, opts Options) (*cache.Dynamo, error) {
	cfg := app.Config.Cache
	if !cfg.On() {
		return nil, nil
	}
	switch {
	case cfg.S3 == nil:
		return nil, fmt.Errorf("%w: the functions keep the cache in the stack's bucket: set cache.s3.bucket (output CacheBucketName), not cache.dir", ErrCacheEnvironment)
	case opts.Env.CacheTable == "" || opts.Env.CacheBucket == "":
		return nil, fmt.Errorf("%w: %s and %s are not set: deploy the stack with CacheBucketMaxAgeDays above 0", ErrCacheEnvironment, EnvCacheTable, EnvCacheBucket)
	case cfg.S3.Bucket != opts.Env.CacheBucket:
		return nil, fmt.Errorf("%w: cache.s3.bucket is %q but the stack's bucket (the only one the functions may use) is %q", ErrCacheEnvironment, cfg.S3.Bucket, opts.Env.CacheBucket)
	}
	s3client := s3.NewFromConfig(opts.AWS, func(o *s3.Options) {
		if cfg.S3.Endpoint != "" {
			o.BaseEndpoint = &cfg.S3.Endpoint
		}
		o.UsePathStyle = cfg.S3.PathStyle
	})
	store, err := cache.NewDynamo(cache.DynamoOptions{
		DB: dynamodb.NewFromConfig(opts.AWS, opts.DynamoDBOptions...), Table: opts.Env.CacheTable,
		S3: s3client, Bucket: cfg.S3.Bucket, Prefix: cfg.S3.Prefix,
		Policy: cache.EvictionPolicy{MaxAge: cfg.MaxAge, MaxBytes: cfg.MaxBytes},
		Log:    app.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("lambdafn: %w", err)
	}
	return store, nil
}

// buildMetadataCache returns nil when the config's cache is off.
func buildMetadataCache(app *App, opts Options) (*metadataCache, error) {
	cfg := app.Config.Cache
	if !cfg.On() {
		return nil, nil
	}
	store, err := CacheStore(app, opts)
	if err != nil {
		return nil, err
	}
	if len(app.tokenKey) == 0 {
		return nil, errors.New("lambdafn: the cache needs the instance token key")
	}
	key := app.tokenKey
	tokens, err := cache.NewTokens(key, app.Config.ControllerID, nil)
	if err != nil {
		return nil, fmt.Errorf("lambdafn: %w", err)
	}
	agents, err := cache.NewAgentTokens(key, app.Config.ControllerID, nil)
	if err != nil {
		return nil, fmt.Errorf("lambdafn: %w", err)
	}
	// The same derivation as serve's: a URL signed by one instance is
	// good at every other.
	m := hmac.New(sha256.New, key)
	m.Write([]byte("runfleet actions/cache blob URLs"))
	public := app.Config.Server.PublicURL
	counts := &cache.Metrics{}
	h, err := cache.NewHandler(cache.Options{
		Store: store, Tokens: tokens, BlobKey: m.Sum(nil), PublicURL: public,
		MaxEntryBytes: cfg.MaxEntryBytes, Log: app.Logger, Metrics: counts,
	})
	if err != nil {
		return nil, fmt.Errorf("lambdafn: %w", err)
	}
	jobs, err := cache.NewJobTokenHandler(cache.JobTokenOptions{
		Agents: agents, Tokens: tokens, Ledger: cache.StoreLedger{Store: app.Store}, Bindings: app.Store, Log: app.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("lambdafn: %w", err)
	}
	return &metadataCache{handler: h, jobTokens: jobs, agents: agents, pools: cfg.ForPool,
		public: strings.TrimRight(public, "/"), results: cfg.ResultsHosts, metrics: counts}, nil
}

// route returns the cache's handler for r, or nil when r is not a cache
// call (the metadata endpoints take it).
func (c *metadataCache) route(r *http.Request) http.Handler {
	if c == nil {
		return nil
	}
	switch p := r.URL.Path; {
	case p == cache.JobTokenPath:
		return c.jobTokens
	case strings.HasPrefix(p, cache.TwirpPrefix), strings.HasPrefix(p, cache.BlobPrefix):
		return c.handler
	}
	return nil
}

// agentConfig is metadata/cache-agent for the machines of cache.pools
// (nil when the cache is off).
func (c *metadataCache) agentConfig(log *slog.Logger) metadata.CacheAgentFunc {
	if c == nil {
		return nil
	}
	return func(inst *runner.Instance) (metadata.CacheAgentConfig, bool, error) {
		if !c.pools(inst.Pool) {
			return metadata.CacheAgentConfig{}, false, nil
		}
		tok, err := c.agents.Mint(inst.Name, inst.Pool, cache.DefaultAgentTokenTTL)
		if err != nil {
			return metadata.CacheAgentConfig{}, false, err
		}
		log.Info("cache: agent configured", "instance", inst.Name, "pool", inst.Pool)
		return metadata.CacheAgentConfig{CacheURL: c.public, AgentToken: tok, ResultsHosts: c.results}, true, nil
	}
}

// serve answers r with the cache's handler and records the invocation's
// lookups and bytes as EMF (runfleet_cache_lookups_total,
// runfleet_cache_transfer_bytes_total). Lambda runs one invocation at a
// time per execution environment, so the counters' difference across it
// is the invocation's own.
func (c *metadataCache) serve(h http.Handler, w http.ResponseWriter, r *http.Request, rec *metrics.EMF) {
	before := c.metrics.Snapshot()
	h.ServeHTTP(w, r)
	after := c.metrics.Snapshot()
	rec.CacheServed(metrics.CacheFigures{
		Hits: after.Hits - before.Hits, Misses: after.Misses - before.Misses,
		BytesUploaded: after.BytesUploaded - before.BytesUploaded, BytesDown: after.BytesDownloaded - before.BytesDownloaded,
	})
}
