package cache

import (
	"errors"
	"net/http"
	"testing"
)

func TestBlobRange(t *testing.T) {
	const size = 100
	tests := []struct {
		name           string
		msRange, rng   string
		size           int64
		start, n       int64
		partial, isErr bool
		unsatisfiable  bool
	}{
		{name: "none", size: size, start: 0, n: size},
		{name: "from an offset (the storage SDK's resume)", msRange: "bytes=40-", size: size, start: 40, n: 60, partial: true},
		{name: "a closed range", msRange: "bytes=10-19", size: size, start: 10, n: 10, partial: true},
		{name: "an end past the blob is cut to it", msRange: "bytes=90-500", size: size, start: 90, n: 10, partial: true},
		{name: "the whole blob from 0 is not partial", msRange: "bytes=0-", size: size, start: 0, n: size},
		{name: "the last bytes", rng: "bytes=-5", size: size, start: 95, n: 5, partial: true},
		{name: "a suffix over the size is the whole blob", rng: "bytes=-500", size: size, start: 0, n: size},
		{name: "HTTP's Range when there is no x-ms-range", rng: "bytes=1-1", size: size, start: 1, n: 1, partial: true},
		{name: "x-ms-range wins over Range", msRange: "bytes=2-3", rng: "bytes=50-", size: size, start: 2, n: 2, partial: true},
		{name: "a start at the end", msRange: "bytes=100-", size: size, unsatisfiable: true, isErr: true},
		{name: "any range of an empty blob", msRange: "bytes=0-", size: 0, unsatisfiable: true, isErr: true},
		{name: "two ranges", msRange: "bytes=0-1,5-6", size: size, isErr: true},
		{name: "not bytes", msRange: "items=0-1", size: size, isErr: true},
		{name: "an end before the start", msRange: "bytes=9-3", size: size, isErr: true},
		{name: "a negative start", msRange: "bytes=-0", size: size, isErr: true},
		{name: "garbage", msRange: "bytes=a-b", size: size, isErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			if tt.msRange != "" {
				h.Set("x-ms-range", tt.msRange)
			}
			if tt.rng != "" {
				h.Set("Range", tt.rng)
			}
			start, n, partial, err := BlobRange(h, tt.size)
			if tt.isErr {
				if err == nil {
					t.Fatalf("BlobRange = %d, %d, %v; want an error", start, n, partial)
				}
				if got := errors.Is(err, ErrRangeNotSatisfiable); got != tt.unsatisfiable {
					t.Fatalf("error %v: unsatisfiable = %v, want %v", err, got, tt.unsatisfiable)
				}
				return
			}
			if err != nil || start != tt.start || n != tt.n || partial != tt.partial {
				t.Fatalf("BlobRange = %d, %d, %v, %v; want %d, %d, %v", start, n, partial, err, tt.start, tt.n, tt.partial)
			}
		})
	}
}
