package work

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/runfleet/runfleet/internal/cache"
	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/lambdafn"
	"github.com/runfleet/runfleet/internal/runner"
)

// CacheEvictLease is the store lease that keeps the cache's eviction to
// one run per cache.evict_every across every execution environment of
// the reconciler: each run takes it for the interval under a holder of
// its own, and leaves it to expire.
const CacheEvictLease = "cache-evict"

// cacheEvictTimeout bounds one eviction run inside the reconciler's
// invocation (120 s in template.yaml), after its pass: a run cut short
// has deleted what it deleted (each delete is conditional) and the next
// one goes on.
const cacheEvictTimeout = 60 * time.Second

// cacheEvictor is the reconciler's eviction of the actions/cache index
// on AWS: cache.Dynamo.Evict (a scan, PlanEviction, conditional deletes)
// at most once per every.
type cacheEvictor struct {
	store *cache.Dynamo
	every time.Duration
}

// cacheEvictionEvery says whether the reconciler evicts for cfg, and how
// often: only when the cache is on (in the stack's bucket) and has a
// limit to apply.
func cacheEvictionEvery(cfg config.Cache) (time.Duration, bool) {
	if !cfg.On() || cfg.S3 == nil || (cfg.MaxBytes <= 0 && cfg.MaxAge <= 0) || cfg.EvictEvery <= 0 {
		return 0, false
	}
	return cfg.EvictEvery, true
}

// cacheEvictDecision reads the store's answer to taking CacheEvictLease:
// run when it was taken, skip quietly while another run's interval holds
// it, skip and say so when the store could not answer.
func cacheEvictDecision(acquireErr error) (run bool, problem error) {
	if acquireErr == nil {
		return true, nil
	}
	if errors.Is(acquireErr, runner.ErrLeaseHeld) {
		return false, nil
	}
	return false, acquireErr
}

// newCacheEvictor is the reconciler's evictor, nil when it has nothing to
// evict. A cache the stack cannot serve is logged, never fatal: the
// metadata function refuses that config loudly, and the fleet must not
// stop reconciling over its cache.
func newCacheEvictor(a *App, opts Options) *cacheEvictor {
	every, ok := cacheEvictionEvery(a.Config.Cache)
	if !ok {
		return nil
	}
	store, err := lambdafn.CacheStore(a.App, opts.Options)
	if err != nil || store == nil {
		a.Logger.Error("cache eviction is off: the config's cache is not the stack's", "error", err)
		return nil
	}
	return &cacheEvictor{store: store, every: every}
}

// evictCache runs the cache's eviction if its interval is due and records
// what the index holds (runfleet_cache_stored_bytes, runfleet_cache_entries).
// Failures are logged, never the pass's error.
func (a *App) evictCache(ctx context.Context, log *slog.Logger) {
	e := a.cacheEvictor
	if e == nil {
		return
	}
	now := time.Now()
	_, err := a.Store.AcquireLease(ctx, CacheEvictLease, evictHolder(ctx), e.every, now)
	run, problem := cacheEvictDecision(err)
	if problem != nil {
		log.WarnContext(ctx, "cache eviction skipped: its lease could not be read", "error", problem)
	}
	if !run {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, cacheEvictTimeout)
	defer cancel()
	st, err := e.store.Evict(ctx)
	if err != nil {
		log.ErrorContext(ctx, "cache eviction failed", "error", err, "duration_ms", time.Since(now).Milliseconds())
		return
	}
	left := e.store.Stats()
	a.Metrics.CacheStored(left.Bytes, int64(left.Entries))
	log.InfoContext(ctx, "cache eviction finished", "evicted_entries", st.Entries, "evicted_bytes", st.Bytes,
		"stored_entries", left.Entries, "stored_bytes", left.Bytes, "duration_ms", time.Since(now).Milliseconds())
}

// evictHolder names this run as the eviction lease's holder: the Lambda
// request, or a random name outside Lambda.
func evictHolder(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		return "reconciler/" + lc.AwsRequestID
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "reconciler/" + hex.EncodeToString(b)
}
