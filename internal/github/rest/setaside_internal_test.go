package rest

import (
	"testing"
	"time"
)

// Not installed is believed for ten minutes whatever the count; a refusal
// is rechecked after a minute, doubling, never beyond fifteen.
func TestRecheckAfter(t *testing.T) {
	for _, tc := range []struct {
		reason  setAsideReason
		answers int
		want    time.Duration
	}{
		{notInstalled, 1, 10 * time.Minute},
		{notInstalled, 7, 10 * time.Minute},
		{refused, 1, time.Minute},
		{refused, 2, 2 * time.Minute},
		{refused, 3, 4 * time.Minute},
		{refused, 4, 8 * time.Minute},
		{refused, 5, 15 * time.Minute},
		{refused, 1000, 15 * time.Minute},
	} {
		if got := recheckAfter(tc.reason, tc.answers); got != tc.want {
			t.Errorf("recheckAfter(%d, %d) = %s, want %s", tc.reason, tc.answers, got, tc.want)
		}
	}
}
