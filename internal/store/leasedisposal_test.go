package store

import (
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/testclock"
)

func TestLeaseRemovable(t *testing.T) {
	now := testclock.At(time.Date(2030, 5, 1, 12, 0, 0, 0, time.UTC)).Now()
	long := now.Add(-DisposableLeaseGrace - time.Second)
	recent := now.Add(-DisposableLeaseGrace + time.Second)
	held := func(name string, until time.Time) *runner.Lease {
		return &runner.Lease{Name: name, Holder: "h", ExpiresAt: until, Version: 2}
	}
	tests := []struct {
		name  string
		lease *runner.Lease
		want  bool
	}{
		{"a replica life lapsed past the grace", held("replica/a1", long), true},
		{"exactly at the grace's end", held("replica/a1", now.Add(-DisposableLeaseGrace)), true},
		{"a machine's cache binding lapsed past the grace", held("cache-job/i-1", long), true},
		{"lapsed within the grace", held("replica/a1", recent), false},
		{"still held", held("replica/a1", now.Add(time.Minute)), false},
		{"a fixed-name lease stays however old", held("reconciler", long), false},
		{"a scale set's listener stays", held("listener/7", long), false},
		{"a bare prefix is not a life", held("replica/", long), false},
		{"never written", &runner.Lease{Name: "replica/a1"}, false},
		{"a released replica life goes at once", &runner.Lease{Name: "replica/a1", Version: 3}, true},
		{"a released fixed-name lease stays", &runner.Lease{Name: "reconciler", Version: 3}, false},
		{"no lease", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LeaseRemovable(tt.lease, now); got != tt.want {
				t.Errorf("LeaseRemovable(%+v) = %v, want %v", tt.lease, got, tt.want)
			}
		})
	}
}
