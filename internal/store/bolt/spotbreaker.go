package bolt

import (
	"context"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// GetSpotBreaker implements store.SpotBreakers.
func (s *Store) GetSpotBreaker(ctx context.Context, pool string) (*runner.SpotBreaker, error) {
	return spotBreakerKind.find(ctx, s, pool)
}

// PutSpotBreaker implements store.SpotBreakers.
func (s *Store) PutSpotBreaker(ctx context.Context, next *runner.SpotBreaker) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt: spot breaker: %w", err)
	}
	if next == nil || next.Pool == "" {
		return fmt.Errorf("bolt: spot breaker: no pool")
	}
	record := next.Clone()
	record.Version = next.Version + 1
	err := s.update(func(tx *bbolt.Tx) error {
		return spotBreakerKind.compareAndSet(tx, store.Expect(store.KindSpotBreaker, next.Pool, "", next.Version), record)
	})
	if err != nil {
		return err
	}
	next.Version = record.Version
	return nil
}
