package metrics

// CacheFigures is what the actions/cache service reports at a scrape:
// its counters since start and what its store holds now.
type CacheFigures struct {
	Hits, Misses               int64
	BytesUploaded, BytesDown   int64
	StoredBytes, StoredEntries int64
}

// CacheResults are runfleet_cache_lookups_total's results; CacheOps its
// transfer directions (runfleet_cache_transfer_bytes_total's op).
var (
	CacheResults = []string{"hit", "miss"}
	CacheOps     = []string{"upload", "download"}
)
