package metrics_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/metrics"
	"github.com/runfleet/runfleet/internal/testclock"
)

// The cache's figures on AWS: an invocation's lookups and bytes (a series
// only when not 0, as every counter's), the index's size after an
// eviction run (0 included); bytes in Bytes, counts in Count.
func TestEMFCacheFigures(t *testing.T) {
	var out bytes.Buffer
	clock := testclock.At(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	e := metrics.NewEMF(&out, "ctl").WithClock(clock.Now)
	e.CacheServed(metrics.CacheFigures{Hits: 2, BytesUploaded: 5000})
	e.CacheStored(0, 0)
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	units := map[string]string{}
	values := map[string]float64{}
	for _, d := range emfDocs(t, out.String()) {
		for _, directive := range d.AWS.CloudWatchMetrics {
			for _, m := range directive.Metrics {
				units[m.Name] = m.Unit
				key := m.Name
				f, _ := metrics.FamilyByName(m.Name)
				for _, l := range f.Labels {
					if v, ok := d.fields[l].(string); ok {
						key += "{" + v + "}"
					}
				}
				values[key], _ = d.fields[m.Name].(float64)
			}
		}
	}
	want := map[string]float64{
		metrics.CacheLookups + "{hit}":          2,
		metrics.CacheTransferBytes + "{upload}": 5000,
		metrics.CacheStoredBytes:                0,
		metrics.CacheEntries:                    0,
	}
	if len(values) != len(want) {
		t.Errorf("series %v, want %v (no miss, no download: they were 0)\n%s", values, want, out.String())
	}
	for k, v := range want {
		if got, ok := values[k]; !ok || got != v {
			t.Errorf("%s = %v (%v), want %v; series %v", k, got, ok, v, values)
		}
	}
	for name, unit := range map[string]string{metrics.CacheLookups: "Count", metrics.CacheTransferBytes: "Bytes", metrics.CacheStoredBytes: "Bytes", metrics.CacheEntries: "Count"} {
		if units[name] != unit {
			t.Errorf("%s unit %q, want %s", name, units[name], unit)
		}
	}
}
