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
	"github.com/runfleet/runfleet/internal/store"
)

var _ store.Purger = (*Store)(nil)

// purgeBatchSize bounds one purge transaction, so a large backlog (a store
// reopened after weeks) does not hold the single writer lock for long. A
// variable only so a test can cross batch boundaries cheaply.
var purgeBatchSize = 1000

// PurgeExpired removes deleted instances and settled jobs whose retention
// has passed, and returns how many records it removed.
// It is embedded mode's stand-in for DynamoDB's TTL; the reconciler calls it.
// It reads only the expiry indexes, so its cost follows what is due, not
// the size of the history.
// Once-only leases lapsed long ago (store.LeaseRemovable) go with them.
func (s *Store) PurgeExpired(ctx context.Context) (int, error) {
	n, err := s.purgeExpired(ctx, "purge expired", expiringInstances, expiringJobs)
	if err != nil {
		return n, err
	}
	m, err := s.purgeLeases()
	return n + m, err
}

// expiring describes records that an expiry index lists: the index's keys
// are expiryKey(expiresAt, id), the records are keyed by id.
type expiring struct {
	records, index []byte // bucket names
	// expiry reads record id: when it expires, and whether it may be
	// removed then (false when it is gone, or must stay whatever its
	// expiry says).
	expiry func(records *bbolt.Bucket, id string) (expiresAt time.Time, removable bool, err error)
}

var (
	expiringInstances = expiring{
		records: bucketInstances,
		index:   bucketInstanceExpiry,
		expiry:  instanceExpiry,
	}
	expiringJobs = expiring{
		records: bucketJobs,
		index:   bucketJobExpiry,
		expiry:  jobExpiry,
	}
)

// instanceExpiry: only a deleted instance is removable; its ExpiresAt ends
// the retention that lets late events still find it.
func instanceExpiry(records *bbolt.Bucket, name string) (time.Time, bool, error) {
	inst, err := instanceKind.read(records, name)
	if err != nil || inst == nil {
		return time.Time{}, false, err
	}
	return inst.ExpiresAt, inst.Status == runner.StatusDeleted, nil
}

// jobExpiry: only a settled job is removable; an open one is demand.
func jobExpiry(records *bbolt.Bucket, key string) (time.Time, bool, error) {
	job, err := jobKind.read(records, key)
	if err != nil || job == nil {
		return time.Time{}, false, err
	}
	return job.ExpiresAt, !unsettled(job.Status), nil
}

// purgeExpired removes the due records of kinds, one batch per
// transaction, until a batch finds fewer due keys than it could hold.
// op names the operation in errors.
func (s *Store) purgeExpired(ctx context.Context, op string, kinds ...expiring) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, fmt.Errorf("bolt: %s: %w", op, err)
		}
		removed, seen, err := s.purgeBatch(kinds)
		total += removed
		if err != nil {
			return total, fmt.Errorf("bolt: %s: %w", op, err)
		}
		if seen < purgeBatchSize {
			return total, nil
		}
	}
}

// purgeBatch handles up to purgeBatchSize due index keys, taken from kinds
// in order. seen counts the keys it handled (a key whose record was already
// replaced removes only the key), removed counts records deleted.
func (s *Store) purgeBatch(kinds []expiring) (removed, seen int, err error) {
	now := s.now()
	err = s.update(func(tx *bbolt.Tx) error {
		due := make([][][]byte, len(kinds))
		dueCount := 0
		for i, kind := range kinds {
			// Buckets created on first use (credentials) may not exist yet.
			if index := tx.Bucket(kind.index); index != nil && tx.Bucket(kind.records) != nil {
				due[i] = dueKeys(index, now, purgeBatchSize-dueCount)
				dueCount += len(due[i])
			}
		}
		if dueCount == 0 {
			return boltcommit.Unchanged(errNoChange)
		}
		deleted := 0
		for i, kind := range kinds {
			n, err := purgeKeys(tx, kind, due[i])
			deleted += n
			if err != nil {
				return err
			}
		}
		// Assigned, not accumulated: this function may run more than once.
		removed, seen = deleted, dueCount
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

// purgeKeys deletes due index keys of kind and the records they were
// written for.
func purgeKeys(tx *bbolt.Tx, kind expiring, keys [][]byte) (removed int, err error) {
	if len(keys) == 0 {
		return 0, nil
	}
	records, index := tx.Bucket(kind.records), tx.Bucket(kind.index)
	for _, key := range keys {
		id := expiryKeyID(key)
		expiresAt, removable, err := kind.expiry(records, id)
		if err != nil {
			return removed, err
		}
		// Only the record this key was written for: one written again
		// since (a name re-created, a newer Put) has a key of its own.
		if removable && bytes.Equal(expiryKey(expiresAt, id), key) {
			if err := records.Delete([]byte(id)); err != nil {
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
