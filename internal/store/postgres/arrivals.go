package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/runfleet/runfleet/internal/store"
)

var _ store.Arrivals = (*Store)(nil)

// ListArrivals implements store.Arrivals. The ledger holds a week of
// settled jobs; the pool is read from the record, as no column keeps it.
// Jobs whose retention is over but not yet purged are left out, as GetJob
// does.
func (s *Store) ListArrivals(ctx context.Context, pools []string, since time.Time) (map[string][]time.Time, error) {
	rows, err := s.pool.Query(ctx, `SELECT record->>'pool', queued_at FROM runfleet_jobs
		WHERE queued_at >= $1 AND record->>'pool' = ANY($2) AND (expires_at IS NULL OR expires_at > $3)`, since, pools, s.now())
	if err != nil {
		return nil, fmt.Errorf("postgres: list arrivals: %w", err)
	}
	defer rows.Close()
	out := map[string][]time.Time{}
	for rows.Next() {
		var pool string
		var t time.Time
		if err := rows.Scan(&pool, &t); err != nil {
			return nil, fmt.Errorf("postgres: list arrivals: %w", err)
		}
		out[pool] = append(out[pool], t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list arrivals: %w", err)
	}
	return out, nil
}
