package bolt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/boltcommit"
)

// MarkDelivery implements store.Store. Expiry is judged here against the
// clock, so a mark past its ttl counts as absent whether or not
// PurgeExpired has removed it yet.
func (s *Store) MarkDelivery(ctx context.Context, id string, ttl time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("bolt: mark delivery: %w", err)
	}
	if id == "" {
		return false, errors.New("bolt: mark delivery: empty id")
	}
	if ttl <= 0 {
		return false, fmt.Errorf("bolt: mark delivery %q: ttl %v is not positive", id, ttl)
	}
	now := s.now()
	err := s.update(func(tx *bbolt.Tx) error {
		deliveries := tx.Bucket(bucketDeliveries)
		index := tx.Bucket(bucketDeliveryExpiry)
		old, err := readDelivery(deliveries, id)
		if err != nil {
			return err
		}
		if old != nil {
			if old.ExpiresAt.After(now) {
				return boltcommit.Unchanged(errNoChange)
			}
			if err := index.Delete(expiryKey(old.ExpiresAt, id)); err != nil {
				return err
			}
		}
		rec := deliveryRecord{ExpiresAt: now.Add(ttl)}
		raw, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("bolt: encode delivery %q: %w", id, err)
		}
		if err := deliveries.Put([]byte(id), raw); err != nil {
			return err
		}
		return index.Put(expiryKey(rec.ExpiresAt, id), nil)
	})
	switch {
	case errors.Is(err, errNoChange):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// ForgetDelivery implements store.Store. Forgetting an unknown id is not an
// error: the caller wants it absent, and it is.
func (s *Store) ForgetDelivery(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt: forget delivery: %w", err)
	}
	if id == "" {
		return nil
	}
	err := s.update(func(tx *bbolt.Tx) error {
		deliveries := tx.Bucket(bucketDeliveries)
		old, err := readDelivery(deliveries, id)
		if err != nil {
			return err
		}
		if old == nil {
			return boltcommit.Unchanged(errNoChange)
		}
		if err := tx.Bucket(bucketDeliveryExpiry).Delete(expiryKey(old.ExpiresAt, id)); err != nil {
			return err
		}
		return deliveries.Delete([]byte(id))
	})
	if err != nil && !errors.Is(err, errNoChange) {
		return err
	}
	return nil
}
