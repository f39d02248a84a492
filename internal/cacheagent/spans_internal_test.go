package cacheagent

import (
	"testing"

	"github.com/runfleet/runfleet/internal/cache"
)

// The ranges fetched for a wanted byte range: only the parts' bytes within
// it, cut at fetchChunk, in the archive's order.
func TestSpansOfAWantedRange(t *testing.T) {
	const mb = 1 << 20
	parts := []cache.PartURL{{Size: 8 * mb}, {Size: 20 * mb}, {Size: 5}}
	total := int64(28*mb + 5)
	type got struct {
		index  int
		off, n int64
	}
	tests := []struct {
		name string
		want cache.ByteRange
		out  []got
	}{
		{"the whole archive", cache.ByteRange{Start: 0, N: total, Size: total},
			[]got{{0, 0, 8 * mb}, {1, 0, 8 * mb}, {1, 8 * mb, 8 * mb}, {1, 16 * mb, 4 * mb}, {2, 0, 5}}},
		{"from inside the second part to the end", cache.ByteRange{Start: 10 * mb, N: total - 10*mb, Size: total, Partial: true},
			[]got{{1, 2 * mb, 8 * mb}, {1, 10 * mb, 8 * mb}, {1, 18 * mb, 2 * mb}, {2, 0, 5}}},
		{"a few bytes across a part's end", cache.ByteRange{Start: 8*mb - 2, N: 4, Size: total, Partial: true},
			[]got{{0, 8*mb - 2, 2}, {1, 0, 2}}},
		{"the last byte", cache.ByteRange{Start: total - 1, N: 1, Size: total, Partial: true},
			[]got{{2, 4, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := spans(parts, tt.want)
			if len(out) != len(tt.out) {
				t.Fatalf("%d spans, want %d: %+v", len(out), len(tt.out), out)
			}
			var sum int64
			for i, s := range out {
				if s.index != tt.out[i].index || s.off != tt.out[i].off || s.n != tt.out[i].n {
					t.Errorf("span %d = part %d [%d, +%d), want part %d [%d, +%d)", i, s.index, s.off, s.n, tt.out[i].index, tt.out[i].off, tt.out[i].n)
				}
				sum += s.n
			}
			if sum != tt.want.N {
				t.Errorf("spans cover %d bytes, want %d", sum, tt.want.N)
			}
		})
	}
}
