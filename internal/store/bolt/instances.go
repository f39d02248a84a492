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

// expiredAt reports whether a stored record is a deleted instance whose
// retention has passed at now.
func expiredAt(inst *runner.Instance, now time.Time) bool {
	return inst.Status == runner.StatusDeleted && !inst.ExpiresAt.IsZero() && !inst.ExpiresAt.After(now)
}

// UpdateInstance implements store.Store.
func (s *Store) UpdateInstance(ctx context.Context, from runner.Status, next *runner.Instance) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt: update instance: %w", err)
	}
	if next == nil {
		return errors.New("bolt: update instance: nil instance")
	}
	if err := runner.CheckTransition(next.Name, from, next.Status); err != nil {
		return err
	}
	record := next.Clone()
	record.Version = next.Version + 1
	if record.Status == runner.StatusDeleted && record.ExpiresAt.IsZero() {
		record.ExpiresAt = s.now().Add(store.DeletedRetention)
	}
	err := s.update(func(tx *bbolt.Tx) error {
		stored, err := instanceKind.get(tx, record.Name)
		if err != nil {
			return err
		}
		if err := instanceKind.check(store.Expect(store.KindInstance, next.Name, from, next.Version), stored); err != nil {
			return err
		}
		if stored.Pool != record.Pool {
			// The pool owns the capacity slot and the index entry; moving an
			// instance between pools is not something the engine does.
			return boltcommit.Unchanged(fmt.Errorf("bolt: instance %q cannot move from pool %q to %q", record.Name, stored.Pool, record.Pool))
		}
		if err := instanceKind.put(tx, record.Name, record); err != nil {
			return err
		}
		if record.Status.Live() {
			return nil
		}
		// from is live (nothing leaves deleted), so this write ends the
		// instance: release its slot and keep it only until it expires.
		if err := tx.Bucket(bucketLiveInstances).Delete(liveKey(record.Pool, record.Name)); err != nil {
			return err
		}
		if err := addToPool(tx.Bucket(bucketPools), record.Pool, -1); err != nil {
			return err
		}
		return tx.Bucket(bucketInstanceExpiry).Put(expiryKey(record.ExpiresAt, record.Name), nil)
	})
	if err != nil {
		return err
	}
	next.Version = record.Version
	next.ExpiresAt = record.ExpiresAt
	return nil
}

// GetInstance implements store.Store.
func (s *Store) GetInstance(ctx context.Context, name string) (*runner.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: get instance: %w", err)
	}
	inst, err := instanceKind.load(s, name)
	if err != nil {
		return nil, err
	}
	if inst == nil {
		return nil, fmt.Errorf("bolt: instance %q: %w", name, store.ErrNotFound)
	}
	return inst, nil
}

// ListInstancesByPool implements store.Store, reading only the pool's part
// of the live index.
func (s *Store) ListInstancesByPool(ctx context.Context, pool string) ([]*runner.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: list pool %q: %w", pool, err)
	}
	return s.listLive(livePrefix(pool))
}

// ListLiveInstances implements store.Store, reading the live index rather
// than the instance history.
func (s *Store) ListLiveInstances(ctx context.Context) ([]*runner.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: list live instances: %w", err)
	}
	return s.listLive(nil)
}

// listLive returns the instances whose live index key starts with prefix.
func (s *Store) listLive(prefix []byte) ([]*runner.Instance, error) {
	var out []*runner.Instance
	err := s.db.View(func(tx *bbolt.Tx) error {
		instances := tx.Bucket(bucketInstances)
		c := tx.Bucket(bucketLiveInstances).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			sep := bytes.IndexByte(k, keySeparator)
			if sep < 0 {
				return fmt.Errorf("bolt: malformed live index key %q", k)
			}
			name := string(k[sep+1:])
			inst, err := instanceKind.read(instances, name)
			if err != nil {
				return err
			}
			if inst == nil {
				return fmt.Errorf("bolt: live index names instance %q, which has no record", name)
			}
			out = append(out, inst)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PoolUsage implements store.Store.
func (s *Store) PoolUsage(ctx context.Context, pool string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("bolt: pool usage %q: %w", pool, err)
	}
	var rec poolRecord
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		rec, err = readPool(tx.Bucket(bucketPools), pool)
		return err
	})
	return rec.Live, err
}
