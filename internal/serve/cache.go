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

	"github.com/runfleet/runfleet/internal/cache"
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/metrics"
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
	store   *cache.Disk
	handler *cache.Handler
	tokens  *cache.Tokens
	metrics *cache.Metrics
}

// newCacheService returns nil when cache.dir is unset. The config's
// validation has made sure server.public_url, and so the key, is there.
func newCacheService(cfg *config.Config, key []byte, log *slog.Logger) (*cacheService, error) {
	if cfg.Cache.Dir == "" {
		return nil, nil
	}
	store, err := cache.OpenDisk(cfg.Cache.Dir, cache.EvictionPolicy{MaxAge: cfg.Cache.MaxAge, MaxBytes: cfg.Cache.MaxBytes}, nil, log)
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
	return &cacheService{store: store, handler: h, tokens: tokens, metrics: metrics}, nil
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
