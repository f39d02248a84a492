package dynamodb

import (
	"context"
	"errors"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// A pool's spot breaker is one META# item: the record as JSON (it is read
// and written whole, never queried into) and its version, which the
// conditional put compares.
var spotBreakerKind = documentKind[runner.SpotBreaker]{
	kind:       store.KindSpotBreaker,
	prefix:     prefixMeta + "spot_breaker#",
	attr:       "spot_breaker",
	zero:       func(pool string) *runner.SpotBreaker { return &runner.SpotBreaker{Pool: pool} },
	version:    func(b *runner.SpotBreaker) int64 { return b.Version },
	setVersion: func(b *runner.SpotBreaker, v int64) { b.Version = v },
}

// GetSpotBreaker implements store.SpotBreakers, with ConsistentRead: the
// caller is about to compare-and-set on what it reads.
func (s *Store) GetSpotBreaker(ctx context.Context, pool string) (*runner.SpotBreaker, error) {
	return spotBreakerKind.get(ctx, s, pool)
}

// PutSpotBreaker implements store.SpotBreakers.
func (s *Store) PutSpotBreaker(ctx context.Context, next *runner.SpotBreaker) error {
	if next == nil || next.Pool == "" {
		return errors.New("write spot breaker: no pool")
	}
	record := next.Clone()
	record.Version = next.Version + 1
	if err := spotBreakerKind.compareAndSet(ctx, s, next.Pool, record); err != nil {
		return err
	}
	next.Version = record.Version
	return nil
}
