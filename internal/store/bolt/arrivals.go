package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/bbolt"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

var _ store.Arrivals = (*Store)(nil)

// ListArrivals implements store.Arrivals by walking every job record once
// for all pools: the ledger holds a week of settled jobs, a few thousand
// records for a busy pool, read once a reconcile pass.
func (s *Store) ListArrivals(ctx context.Context, pools []string, since time.Time) (map[string][]time.Time, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("bolt: list arrivals: %w", err)
	}
	now := s.now()
	out := map[string][]time.Time{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketJobs).ForEach(func(_, raw []byte) error {
			var j runner.Job
			if err := json.Unmarshal(raw, &j); err != nil {
				return fmt.Errorf("bolt: list arrivals: decode job: %w", err)
			}
			if slices.Contains(pools, j.Pool) && !j.QueuedAt.Before(since) && !jobGoneAt(&j, now) {
				out[j.Pool] = append(out[j.Pool], j.QueuedAt)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
