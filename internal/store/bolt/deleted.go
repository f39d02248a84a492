package bolt

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	bbolt "go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

var _ store.DeletedLister = (*Store)(nil)

// ListDeletedInstances implements store.DeletedLister. It walks every
// instance record, live ones included, since no index names the deleted
// ones; the purge keeps that walk bounded by a week of history. A record
// past its retention but not yet purged is left out, as it is gone for
// every other purpose (its name may be created again).
func (s *Store) ListDeletedInstances(ctx context.Context, pool string) ([]*runner.Instance, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: list deleted instances: %w", err)
	}
	now := s.now()
	out := []*runner.Instance{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		instances := tx.Bucket(bucketInstances)
		return instances.ForEach(func(k, _ []byte) error {
			inst, err := instanceKind.read(instances, string(k))
			if err != nil {
				return err
			}
			if inst.Status != runner.StatusDeleted || expiredAt(inst, now) || (pool != "" && inst.Pool != pool) {
				return nil
			}
			out = append(out, inst)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("bolt: list deleted instances: %w", err)
	}
	slices.SortFunc(out, func(a, b *runner.Instance) int {
		return cmp.Or(b.StatusChangedAt.Compare(a.StatusChangedAt), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}
