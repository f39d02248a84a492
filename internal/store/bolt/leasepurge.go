package bolt

import (
	"bytes"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/boltcommit"
	"github.com/runfleet/runfleet/internal/store"
)

// purgeLeases removes the records of once-only leases (a replica life's
// liveness, a machine's cache binding) that lapsed more than
// store.DisposableLeaseGrace ago, up to purgeBatchSize per transaction.
// It reads only those prefixes of the leases bucket; every other lease
// record stays.
func (s *Store) purgeLeases() (int, error) {
	total := 0
	for {
		removed, full, err := s.purgeLeaseBatch()
		total += removed
		if err != nil {
			return total, fmt.Errorf("bolt: purge lapsed leases: %w", err)
		}
		if !full {
			return total, nil
		}
	}
}

// purgeLeaseBatch removes up to purgeBatchSize removable leases; full says
// the batch was filled, so more may be due.
func (s *Store) purgeLeaseBatch() (removed int, full bool, err error) {
	now := s.now()
	err = s.update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketLeases)
		var due [][]byte
		for _, prefix := range store.DisposableLeasePrefixes() {
			p := []byte(prefix)
			c := b.Cursor()
			for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p) && len(due) < purgeBatchSize; k, _ = c.Next() {
				l, err := leaseKind.read(b, string(k))
				if err != nil {
					return err
				}
				if store.LeaseRemovable(l, now) {
					due = append(due, bytes.Clone(k))
				}
			}
		}
		if len(due) == 0 {
			return boltcommit.Unchanged(errNoChange)
		}
		for _, k := range due {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		// Assigned, not accumulated: this function may run more than once.
		removed, full = len(due), len(due) >= purgeBatchSize
		return nil
	})
	if errors.Is(err, errNoChange) {
		return 0, false, nil
	}
	return removed, full, err
}
