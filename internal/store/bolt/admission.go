package bolt

import (
	"context"
	"fmt"
	"strings"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/boltcommit"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// CreateInstance implements store.Store: the instance, its pool slot and
// the job's next version in one transaction.
func (s *Store) CreateInstance(ctx context.Context, a store.Admission) error {
	return s.admit(ctx, a, nil)
}

// admit is CreateInstance; also, if not nil, runs in the same transaction
// once the admission is written, so that its writes commit iff the
// admission's do. It follows the rules of update's functions.
func (s *Store) admit(ctx context.Context, a store.Admission, also func(tx *bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("bolt: create instance: %w", err)
	}
	if err := store.CheckAdmission(a); err != nil {
		return err
	}
	if strings.IndexByte(a.Instance.Pool, keySeparator) >= 0 {
		// It would make the pool's live index prefix match another pool's.
		return fmt.Errorf("bolt: create instance %q: invalid pool name %q", a.Instance.Name, a.Instance.Pool)
	}
	record := a.Instance.Clone()
	record.Version = 1
	now := s.now()
	var job *jobWrite
	if a.Job != nil {
		w := newJobWrite(a.Job, a.JobFrom, now)
		job = &w
	}
	err := s.update(func(tx *bbolt.Tx) error {
		// Every check first, so a refusal writes nothing. A taken name is
		// reported before anything else: the caller learns its runner
		// exists already. A stale job comes before a full pool, so a
		// caller re-reads the job rather than waits for room it may not
		// need.
		instances := tx.Bucket(bucketInstances)
		existing, err := instanceKind.read(instances, record.Name)
		if err != nil {
			return err
		}
		if existing != nil && !expiredAt(existing, now) {
			return boltcommit.Unchanged(fmt.Errorf("bolt: instance %q: %w", record.Name, store.ErrAlreadyExists))
		}
		var storedJob *runner.Job
		if job != nil {
			if storedJob, err = job.check(tx, now); err != nil {
				return err
			}
		}
		pools := tx.Bucket(bucketPools)
		usage, err := readPool(pools, record.Pool)
		if err != nil {
			return err
		}
		if usage.Live >= a.MaxRunners {
			return boltcommit.Unchanged(fmt.Errorf("bolt: pool %q holds %d of %d: %w", record.Pool, usage.Live, a.MaxRunners, store.ErrPoolFull))
		}

		if existing != nil {
			// Its retention is over but PurgeExpired has not run yet: the
			// name is free, as it would be in DynamoDB before TTL deletes.
			if err := tx.Bucket(bucketInstanceExpiry).Delete(expiryKey(existing.ExpiresAt, existing.Name)); err != nil {
				return err
			}
		}
		if err := instanceKind.put(tx, record.Name, record); err != nil {
			return err
		}
		if err := tx.Bucket(bucketLiveInstances).Put(liveKey(record.Pool, record.Name), nil); err != nil {
			return err
		}
		if err := addToPool(pools, record.Pool, +1); err != nil {
			return err
		}
		if job != nil {
			if err := job.apply(tx, storedJob); err != nil {
				return err
			}
		}
		if also != nil {
			return also(tx)
		}
		return nil
	})
	if err != nil {
		return err
	}
	a.Instance.Version = record.Version
	if job != nil {
		job.reportTo(a.Job)
	}
	return nil
}
