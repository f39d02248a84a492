package serve

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/runfleet/runfleet/internal/cache"
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/metadata"
	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// cacheEvictInterval is how often the cache's eviction runs: often enough
// that the disk never overshoots max_bytes by more than a few minutes of
// saves, rarely enough that the walk over the index costs nothing.
const cacheEvictInterval = 5 * time.Minute

// cacheService is runfleet's actions/cache service, on when cache.dir is
// set (docs/actions-cache.md). It signs with the instance token key (cache
// tokens carry their own audience) and derives the blob URL key from it,
// so a restart keeps both working.
type cacheService struct {
	store   cache.Store
	handler *cache.Handler
	tokens  *cache.Tokens
	metrics *cache.Metrics
	// agents mints the machines' agent tokens; jobTokens trades them for
	// job cache tokens, once the store is known (useStore).
	agents    *cache.AgentTokens
	jobTokens *cache.JobTokenHandler
	cfg       config.Cache
	publicURL string
	log       *slog.Logger
}

// newCacheService returns nil when the cache is off. The config's
// validation has made sure server.public_url, and so the key, is there.
func newCacheService(cfg *config.Config, key []byte, log *slog.Logger) (*cacheService, error) {
	if !cfg.Cache.On() {
		return nil, nil
	}
	store, err := openCacheStore(cfg.Cache, log)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	tokens, err := cache.NewTokens(key, cfg.ControllerID, nil)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("runfleet actions/cache blob URLs"))
	metrics := &cache.Metrics{}
	h, err := cache.NewHandler(cache.Options{
		Store:         store,
		Tokens:        tokens,
		BlobKey:       m.Sum(nil),
		PublicURL:     cfg.Server.PublicURL,
		MaxEntryBytes: cfg.Cache.MaxEntryBytes,
		Log:           log,
		Metrics:       metrics,
	})
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	agents, err := cache.NewAgentTokens(key, cfg.ControllerID, nil)
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	return &cacheService{store: store, handler: h, tokens: tokens, metrics: metrics, agents: agents,
		cfg: cfg.Cache, publicURL: cfg.Server.PublicURL, log: log}, nil
}

// useStore lets the job token handler read the ledger (nothing when c is
// nil).
func (c *cacheService) useStore(st store.Store) error {
	if c == nil {
		return nil
	}
	h, err := cache.NewJobTokenHandler(cache.JobTokenOptions{
		Agents: c.agents, Tokens: c.tokens, Ledger: cache.StoreLedger{Store: st}, Bindings: st, Log: c.log,
	})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	c.jobTokens = h
	return nil
}

// agentConfig is metadata/cache-agent for machines of the pools in
// cache.pools (nil when the cache is off).
func (c *cacheService) agentConfig() metadata.CacheAgentFunc {
	if c == nil {
		return nil
	}
	return func(inst *runner.Instance) (metadata.CacheAgentConfig, bool, error) {
		if !c.cfg.ForPool(inst.Pool) {
			return metadata.CacheAgentConfig{}, false, nil
		}
		tok, err := c.agents.Mint(inst.Name, inst.Pool, cache.DefaultAgentTokenTTL)
		if err != nil {
			return metadata.CacheAgentConfig{}, false, err
		}
		return metadata.CacheAgentConfig{CacheURL: c.publicURL, AgentToken: tok, ResultsHosts: c.cfg.ResultsHosts}, true, nil
	}
}

// cacheOpenTimeout bounds reading an S3 store's index at start.
const cacheOpenTimeout = 2 * time.Minute

// openCacheStore opens the local-disk or the S3 store cfg names.
func openCacheStore(cfg config.Cache, log *slog.Logger) (cache.Store, error) {
	policy := cache.EvictionPolicy{MaxAge: cfg.MaxAge, MaxBytes: cfg.MaxBytes}
	if cfg.S3 == nil {
		return cache.OpenDisk(cfg.Dir, policy, nil, log)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cacheOpenTimeout)
	defer cancel()
	var opts []func(*awsconfig.LoadOptions) error
	if cfg.S3.Region != "" {
		opts = append(opts, awsconfig.WithRegion(cfg.S3.Region))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("cache.s3: AWS configuration: %w", err)
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.S3.Endpoint != "" {
			o.BaseEndpoint = &cfg.S3.Endpoint
		}
		o.UsePathStyle = cfg.S3.PathStyle
	})
	return cache.OpenS3(ctx, client, cfg.S3.Bucket, cfg.S3.Prefix, policy, nil, log)
}

// figures is what /metrics shows of the cache.
func (c *cacheService) figures() metrics.CacheFigures {
	m, st := c.metrics.Snapshot(), c.store.Stats()
	return metrics.CacheFigures{
		Hits: m.Hits, Misses: m.Misses,
		BytesUploaded: m.BytesUploaded, BytesDown: m.BytesDownloaded,
		StoredBytes: st.Bytes, StoredEntries: int64(st.Entries),
	}
}

// mount adds the cache's routes to mux (nothing when c is nil).
func (c *cacheService) mount(mux *http.ServeMux) {
	if c == nil {
		return
	}
	mux.Handle(cache.TwirpPrefix, c.handler)
	mux.Handle(cache.BlobPrefix, c.handler)
	if c.jobTokens != nil {
		mux.Handle(cache.JobTokenPath, c.jobTokens)
	}
}

// evictEvery runs the cache's eviction until ctx is done.
func (c *cacheService) evictEvery(ctx context.Context, wg *sync.WaitGroup, interval time.Duration, log *slog.Logger) {
	if c == nil {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if _, err := c.store.Evict(ctx); err != nil {
				log.Warn("cache: eviction failed", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}
