package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// purgeBatch bounds one purge statement, so a large backlog (a database
// left for weeks) is removed in steps rather than one long transaction.
const purgeBatch = 1000

// Each purge names its condition twice: in the batch's subquery, and on
// the rows deleted, which PostgreSQL re-checks against a row changed since
// the subquery read it — an instance re-created under an expired name is
// live again and must stay.
const (
	purgeInstancesSQL = `
DELETE FROM runfleet_instances WHERE status = 'deleted' AND expires_at <= $1 AND name IN (
	SELECT name FROM runfleet_instances WHERE status = 'deleted' AND expires_at <= $1 LIMIT $2)`
	purgeJobsSQL = `
DELETE FROM runfleet_jobs WHERE status NOT IN ('open', 'waiting', 'unmatched') AND expires_at <= $1 AND key IN (
	SELECT key FROM runfleet_jobs WHERE status NOT IN ('open', 'waiting', 'unmatched') AND expires_at <= $1 LIMIT $2)`
	// A once-only lease (store.LeaseRemovable): released (no holder), or
	// lapsed before $1, which is now less store.DisposableLeaseGrace; $3 are
	// its names' LIKE patterns.
	purgeLeasesSQL = `
DELETE FROM runfleet_records WHERE kind = 'lease' AND name LIKE ANY($3) AND (record->>'holder' IS NULL OR (record->>'expires_at')::timestamptz <= $1) AND name IN (
	SELECT name FROM runfleet_records WHERE kind = 'lease' AND name LIKE ANY($3) AND (record->>'holder' IS NULL OR (record->>'expires_at')::timestamptz <= $1) LIMIT $2)`
	purgeCredentialsSQL = `
DELETE FROM runfleet_credentials WHERE expires_at <= $1 AND instance IN (
	SELECT instance FROM runfleet_credentials WHERE expires_at <= $1 LIMIT $2)`
)

// PurgeExpired implements store.Purger: deleted instances and settled jobs
// past their retention, and once-only leases (a replica life's liveness, a
// machine's cache binding) lapsed an hour ago. It reads only the expiry
// indexes and the leases' rows. Replicas may purge at once: each row goes
// once.
func (s *Store) PurgeExpired(ctx context.Context) (int, error) {
	instances, err := s.purge(ctx, purgeInstancesSQL)
	if err != nil {
		return instances, err
	}
	jobs, err := s.purge(ctx, purgeJobsSQL)
	if err != nil {
		return instances + jobs, err
	}
	leases, err := s.purgeLeases(ctx)
	return instances + jobs + leases, err
}

// purgeLeases removes the once-only leases store.LeaseRemovable allows.
func (s *Store) purgeLeases(ctx context.Context) (int, error) {
	var patterns []string
	for _, p := range store.DisposableLeasePrefixes() {
		patterns = append(patterns, p+"_%") // a bare prefix names no life
	}
	return s.purgeWith(ctx, purgeLeasesSQL, s.now().Add(-store.DisposableLeaseGrace), patterns)
}

// PurgeExpiredCredentials implements store.Purger.
func (s *Store) PurgeExpiredCredentials(ctx context.Context) (int, error) {
	return s.purge(ctx, purgeCredentialsSQL)
}

// purge runs one batch statement until a batch removes less than a full
// batch, and returns how many rows went.
func (s *Store) purge(ctx context.Context, sql string) (int, error) {
	return s.purgeWith(ctx, sql, s.now())
}

// purgeWith runs purge's loop with the statement's cut-off and its
// further arguments (from $3).
func (s *Store) purgeWith(ctx context.Context, sql string, cutoff time.Time, more ...any) (int, error) {
	total := 0
	for {
		tag, err := s.pool.Exec(ctx, sql, append([]any{cutoff, purgeBatch}, more...)...)
		if err != nil {
			return total, fmt.Errorf("postgres: purge expired: %w", err)
		}
		total += int(tag.RowsAffected())
		if tag.RowsAffected() < purgeBatch {
			return total, nil
		}
	}
}

// sortDeleted orders deleted instances most recently deleted first, then
// by name, as bolt lists them.
func sortDeleted(list []*runner.Instance) {
	slices.SortFunc(list, func(a, b *runner.Instance) int {
		return cmp.Or(b.StatusChangedAt.Compare(a.StatusChangedAt), cmp.Compare(a.Name, b.Name))
	})
}
