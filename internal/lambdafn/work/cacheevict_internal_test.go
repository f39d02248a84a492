package work

import (
	"errors"
	"testing"
	"time"

	"github.com/runfleet/runfleet/internal/config"
	"github.com/runfleet/runfleet/internal/runner"
)

// TestCacheEvictionEvery: the reconciler evicts only a cache on in the
// stack's bucket with a limit to apply, at the configured interval.
func TestCacheEvictionEvery(t *testing.T) {
	s3 := &config.CacheS3{Bucket: "b"}
	for _, c := range []struct {
		name  string
		cfg   config.Cache
		every time.Duration
		on    bool
	}{
		{name: "cache off", cfg: config.Cache{MaxBytes: 1, EvictEvery: time.Minute}},
		{name: "local disk (serve's)", cfg: config.Cache{Dir: "/d", MaxBytes: 1, EvictEvery: time.Minute}},
		{name: "no limit", cfg: config.Cache{S3: s3, EvictEvery: time.Minute}},
		{name: "max_bytes", cfg: config.Cache{S3: s3, MaxBytes: 1, EvictEvery: 10 * time.Minute}, every: 10 * time.Minute, on: true},
		{name: "max_age", cfg: config.Cache{S3: s3, MaxAge: time.Hour, EvictEvery: 5 * time.Minute}, every: 5 * time.Minute, on: true},
		{name: "no interval", cfg: config.Cache{S3: s3, MaxBytes: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			every, on := cacheEvictionEvery(c.cfg)
			if every != c.every || on != c.on {
				t.Fatalf("every %v on %v, want %v %v", every, on, c.every, c.on)
			}
		})
	}
}

// TestCacheEvictDecision: the eviction lease's answer.
func TestCacheEvictDecision(t *testing.T) {
	broken := errors.New("throttled")
	for _, c := range []struct {
		name    string
		err     error
		run     bool
		problem error
	}{
		{name: "taken: run", run: true},
		{name: "another run's interval: skip quietly", err: &runner.LeaseHeldError{Name: CacheEvictLease, Holder: "reconciler/x"}},
		{name: "the store could not answer: skip, say so", err: broken, problem: broken},
	} {
		t.Run(c.name, func(t *testing.T) {
			run, problem := cacheEvictDecision(c.err)
			if run != c.run || !errors.Is(problem, c.problem) || (problem == nil) != (c.problem == nil) {
				t.Fatalf("run %v problem %v, want %v %v", run, problem, c.run, c.problem)
			}
		})
	}
}
