package work

import (
	"testing"
	"time"
)

func TestRetryBackoffGrowsAndIsCapped(t *testing.T) {
	for _, tc := range []struct {
		receives int
		full     time.Duration // the backoff before jitter
	}{
		{receives: 0, full: 5 * time.Second}, // receive count missing
		{receives: 1, full: 5 * time.Second},
		{receives: 2, full: 10 * time.Second},
		{receives: 3, full: 20 * time.Second},
		{receives: 6, full: 160 * time.Second},
		{receives: 7, full: 5 * time.Minute},
		{receives: 1000, full: 5 * time.Minute}, // MaxReceiveCount's maximum: no overflow
	} {
		least, most := retryBackoff(tc.receives, 0), retryBackoff(tc.receives, 0.999999)
		if least != tc.full/2 || most > tc.full || most < tc.full-time.Millisecond {
			t.Errorf("receives %d: backoff spans %v..%v, want %v..%v", tc.receives, least, most, tc.full/2, tc.full)
		}
	}
}
