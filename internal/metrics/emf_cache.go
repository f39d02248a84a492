package metrics

import "github.com/runfleet/runfleet/internal/telemetry"

// CacheServed records what one invocation of the metadata function's
// actions/cache did: its lookups by result (runfleet_cache_lookups_total)
// and the bytes it took in and sent out (runfleet_cache_transfer_bytes_total,
// by op; on the direct path the upload bytes are the presigned parts'
// sizes). As every counter's, a series gets a point only when not 0.
func (e *EMF) CacheServed(f CacheFigures) {
	for i, n := range []int64{f.Hits, f.Misses} {
		if n > 0 {
			e.put(CacheLookups, float64(n), CacheResults[i])
		}
	}
	for i, n := range []int64{f.BytesUploaded, f.BytesDown} {
		if n > 0 {
			e.put(CacheTransferBytes, float64(n), CacheOps[i])
		}
	}
}

// CacheStored records what the cache's index holds after an eviction run
// (runfleet_cache_stored_bytes, runfleet_cache_entries): on AWS the
// reconciler's scan is the only reading of the whole index, so these
// gauges get a point per run (cache.evict_every), 0 included.
func (e *EMF) CacheStored(bytes, entries int64) {
	e.put(CacheStoredBytes, float64(bytes))
	e.put(CacheEntries, float64(entries))
}

// cacheUnit is the CloudWatch unit of the cache's families: bytes for
// the byte counts, as their names say.
func cacheUnit(name string) (telemetry.Unit, bool) {
	switch name {
	case CacheTransferBytes, CacheStoredBytes:
		return telemetry.UnitBytes, true
	}
	return "", false
}
