package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/boltcommit"
	"github.com/runfleet/runfleet/internal/runner"
)

// purgeBatchSize bounds one purge transaction, so a large backlog (a store
// reopened after weeks) does not hold the single writer lock for long. A
// variable only so a test can cross batch boundaries cheaply.
var purgeBatchSize = 1000

// PurgeExpired removes deleted instances whose retention has passed and
// delivery marks past their ttl, and returns how many records it removed.
// It is embedded mode's stand-in for DynamoDB's TTL; the reconciler calls it.
// It reads only the expiry indexes, so its cost follows what is due, not
// the size of the history.
func (s *Store) PurgeExpired(ctx context.Context) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("bolt: purge expired: %w", err)
		}
		removed, seen, err := s.purgeBatch()
		total += removed
		if err != nil {
			return total, fmt.Errorf("bolt: purge expired: %w", err)
		}
		if seen < purgeBatchSize {
			return total, nil
		}
	}
}

// purgeBatch handles up to purgeBatchSize due index keys. seen counts the
// keys it handled (a key whose record was already replaced removes only the
// key), removed counts records deleted.
func (s *Store) purgeBatch() (removed, seen int, err error) {
	now := s.now()
	err = s.update(func(tx *bbolt.Tx) error {
		instanceKeys := dueKeys(tx.Bucket(bucketInstanceExpiry), now, purgeBatchSize)
		deliveryKeys := dueKeys(tx.Bucket(bucketDeliveryExpiry), now, purgeBatchSize-len(instanceKeys))
		if len(instanceKeys)+len(deliveryKeys) == 0 {
			return boltcommit.Unchanged(errNoChange)
		}
		instancesRemoved, err := purgeInstances(tx, instanceKeys)
		if err != nil {
			return err
		}
		deliveriesRemoved, err := purgeDeliveries(tx, deliveryKeys)
		if err != nil {
			return err
		}
		// Assigned, not accumulated: this function may run more than once.
		removed, seen = instancesRemoved+deliveriesRemoved, len(instanceKeys)+len(deliveryKeys)
		return nil
	})
	if errors.Is(err, errNoChange) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	return removed, seen, nil
}

// dueKeys copies up to limit keys of an expiry index that are due at now.
func dueKeys(index *bbolt.Bucket, now time.Time, limit int) [][]byte {
	var keys [][]byte
	c := index.Cursor()
	for k, _ := c.First(); k != nil && len(keys) < limit && expiryKeyDue(k, now); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	return keys
}

func purgeInstances(tx *bbolt.Tx, keys [][]byte) (int, error) {
	index, instances := tx.Bucket(bucketInstanceExpiry), tx.Bucket(bucketInstances)
	removed := 0
	for _, key := range keys {
		name := expiryKeyID(key)
		inst, err := readInstance(instances, name)
		if err != nil {
			return removed, err
		}
		// Only the record this key was written for: a name re-created after
		// its old record expired has a new record and no key here.
		if inst != nil && inst.Status == runner.StatusDeleted && bytes.Equal(expiryKey(inst.ExpiresAt, name), key) {
			if err := instances.Delete([]byte(name)); err != nil {
				return removed, err
			}
			removed++
		}
		if err := index.Delete(key); err != nil {
			return removed, err
		}
	}
	return removed, nil
}

func purgeDeliveries(tx *bbolt.Tx, keys [][]byte) (int, error) {
	index, deliveries := tx.Bucket(bucketDeliveryExpiry), tx.Bucket(bucketDeliveries)
	removed := 0
	for _, key := range keys {
		id := expiryKeyID(key)
		rec, err := readDelivery(deliveries, id)
		if err != nil {
			return removed, err
		}
		if rec != nil && bytes.Equal(expiryKey(rec.ExpiresAt, id), key) {
			if err := deliveries.Delete([]byte(id)); err != nil {
				return removed, err
			}
			removed++
		}
		if err := index.Delete(key); err != nil {
			return removed, err
		}
	}
	return removed, nil
}
