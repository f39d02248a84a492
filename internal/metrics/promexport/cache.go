package promexport

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/runfleet/runfleet/internal/metrics"
)

// cacheCollector reads the actions/cache service's figures at a scrape.
// Its series exist from the start at 0, cache on or off, like every
// other family's.
type cacheCollector struct {
	source                         atomic.Pointer[func() metrics.CacheFigures]
	lookups, transfer, bytes, size *prometheus.Desc
}

func newCacheCollector() *cacheCollector {
	desc := func(name string) *prometheus.Desc {
		f, _ := metrics.FamilyByName(name)
		return prometheus.NewDesc(f.Name, f.Help, f.Labels, nil)
	}
	return &cacheCollector{
		lookups:  desc(metrics.CacheLookups),
		transfer: desc(metrics.CacheTransferBytes),
		bytes:    desc(metrics.CacheStoredBytes),
		size:     desc(metrics.CacheEntries),
	}
}

func (c *cacheCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lookups
	ch <- c.transfer
	ch <- c.bytes
	ch <- c.size
}

func (c *cacheCollector) Collect(ch chan<- prometheus.Metric) {
	var f metrics.CacheFigures
	if src := c.source.Load(); src != nil {
		f = (*src)()
	}
	ch <- prometheus.MustNewConstMetric(c.lookups, prometheus.CounterValue, float64(f.Hits), metrics.CacheResults[0])
	ch <- prometheus.MustNewConstMetric(c.lookups, prometheus.CounterValue, float64(f.Misses), metrics.CacheResults[1])
	ch <- prometheus.MustNewConstMetric(c.transfer, prometheus.CounterValue, float64(f.BytesUploaded), metrics.CacheOps[0])
	ch <- prometheus.MustNewConstMetric(c.transfer, prometheus.CounterValue, float64(f.BytesDown), metrics.CacheOps[1])
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(f.StoredBytes))
	ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(f.StoredEntries))
}

// WatchCache makes the cache families read src at every scrape (serve
// with cache.dir set); without it they read 0.
func (r *Recorder) WatchCache(src func() metrics.CacheFigures) {
	r.cache.source.Store(&src)
}
