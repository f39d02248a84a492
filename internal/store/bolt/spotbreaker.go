package bolt

import (
	"context"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/boltcommit"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// spotBreakerKey is a pool's breaker in the meta bucket: a handful of
// small records, so no bucket (and no schema change) of their own.
func spotBreakerKey(pool string) []byte { return []byte("spot_breaker/" + pool) }

// GetSpotBreaker implements store.SpotBreakers.
func (s *Store) GetSpotBreaker(ctx context.Context, pool string) (*runner.SpotBreaker, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: spot breaker %s: %w", pool, err)
	}
	b := &runner.SpotBreaker{Pool: pool}
	err := s.db.View(func(tx *bbolt.Tx) error {
		raw := tx.Bucket(bucketMeta).Get(spotBreakerKey(pool))
		if raw == nil {
			return nil
		}
		return json.Unmarshal(raw, b)
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: spot breaker %s: %w", pool, err)
	}
	return b, nil
}

// PutSpotBreaker implements store.SpotBreakers.
func (s *Store) PutSpotBreaker(ctx context.Context, next *runner.SpotBreaker) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt: spot breaker: %w", err)
	}
	if next == nil || next.Pool == "" {
		return fmt.Errorf("bolt: spot breaker: no pool")
	}
	expected := next.Version
	record := next.Clone()
	record.Version = expected + 1
	raw, err := json.Marshal(record)
	if err != nil {
		return fmt.Errorf("bolt: spot breaker %s: %w", next.Pool, err)
	}
	err = s.update(func(tx *bbolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		var stored int64
		if cur := meta.Get(spotBreakerKey(next.Pool)); cur != nil {
			var b runner.SpotBreaker
			if err := json.Unmarshal(cur, &b); err != nil {
				return boltcommit.Unchanged(err)
			}
			stored = b.Version
		}
		if stored != expected {
			return boltcommit.Unchanged(&store.SpotBreakerConflictError{Pool: next.Pool, ExpectedVersion: expected})
		}
		return meta.Put(spotBreakerKey(next.Pool), raw)
	})
	if err != nil {
		return err
	}
	next.Version = expected + 1
	return nil
}
