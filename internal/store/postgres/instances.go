package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// updateInstanceSQL is the compare-and-set of every instance write after
// its creation: the row changes only if it still has the status and the
// version the writer read, in the pool it was created in.
const updateInstanceSQL = `
UPDATE runfleet_instances SET status = $5, version = $6, expires_at = $7, record = $8
WHERE name = $1 AND pool = $2 AND status = $3 AND version = $4`

// UpdateInstance implements store.Store. A write that ends the instance
// (to deleted) releases its pool slot in the same transaction.
func (s *Store) UpdateInstance(ctx context.Context, from runner.Status, next *runner.Instance) error {
	if next == nil {
		return errors.New("postgres: update instance: nil instance")
	}
	if err := runner.CheckTransition(next.Name, from, next.Status); err != nil {
		return err
	}
	record := next.Clone()
	record.Version = next.Version + 1
	if record.Status == runner.StatusDeleted && record.ExpiresAt.IsZero() {
		record.ExpiresAt = s.now().Add(store.DeletedRetention)
	}
	raw, err := json.Marshal(record)
	if err != nil {
		return fmt.Errorf("postgres: encode instance %q: %w", record.Name, err)
	}
	expect := store.Expect(store.KindInstance, next.Name, from, next.Version)
	args := []any{record.Name, record.Pool, string(from), next.Version,
		string(record.Status), record.Version, nullTime(record.ExpiresAt), string(raw)}
	write := func(ctx context.Context, q querier) error {
		tag, err := q.Exec(ctx, updateInstanceSQL, args...)
		if err != nil {
			return fmt.Errorf("postgres: update instance %q: %w", record.Name, err)
		}
		if tag.RowsAffected() == 0 {
			return s.instanceRefusal(ctx, q, expect, record.Pool)
		}
		if record.Status.Live() {
			return nil
		}
		// from is live (nothing leaves deleted): this write ends the
		// instance and frees its slot.
		_, err = q.Exec(ctx, "UPDATE runfleet_pools SET live = greatest(live - 1, 0) WHERE name = $1", record.Pool)
		return err
	}
	if record.Status.Live() {
		err = write(ctx, s.pool)
	} else {
		err = inTx(ctx, s.pool, func(tx pgx.Tx) error { return write(ctx, tx) })
	}
	if err != nil {
		return err
	}
	next.Version = record.Version
	next.ExpiresAt = record.ExpiresAt
	return nil
}

// instanceRefusal says why an instance's compare-and-set wrote nothing:
// the record moved on (a conflict), or the writer tried to move it to
// another pool, which owns its slot.
func (s *Store) instanceRefusal(ctx context.Context, q querier, e store.Expectation, pool string) error {
	var storedPool, status string
	var version int64
	err := q.QueryRow(ctx, "SELECT pool, status, version FROM runfleet_instances WHERE name = $1", e.Key).
		Scan(&storedPool, &status, &version)
	if err == nil && e.Met(true, status, version) && storedPool != pool {
		return fmt.Errorf("postgres: instance %q cannot move from pool %q to %q", e.Key, storedPool, pool)
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("postgres: read instance %q: %w", e.Key, err)
	}
	return e.Conflict()
}

// GetInstance implements store.Store. A deleted instance is read until it
// is purged, as in bolt.
func (s *Store) GetInstance(ctx context.Context, name string) (*runner.Instance, error) {
	var raw []byte
	err := s.pool.QueryRow(ctx, "SELECT record FROM runfleet_instances WHERE name = $1", name).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: instance %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get instance %q: %w", name, err)
	}
	return decodeInstance(raw)
}

// ListInstancesByPool implements store.Store from the live index.
func (s *Store) ListInstancesByPool(ctx context.Context, pool string) ([]*runner.Instance, error) {
	return s.listInstances(ctx, "SELECT record FROM runfleet_instances WHERE pool = $1 AND status <> 'deleted' ORDER BY name", pool)
}

// ListLiveInstances implements store.Store from the live index.
func (s *Store) ListLiveInstances(ctx context.Context) ([]*runner.Instance, error) {
	return s.listInstances(ctx, "SELECT record FROM runfleet_instances WHERE status <> 'deleted' ORDER BY pool, name")
}

// ListDeletedInstances implements store.DeletedLister: deleted instances
// whose retention has not passed, most recently deleted first.
func (s *Store) ListDeletedInstances(ctx context.Context, pool string) ([]*runner.Instance, error) {
	out, err := s.listInstances(ctx, `SELECT record FROM runfleet_instances
		WHERE status = 'deleted' AND expires_at > $1 AND ($2 = '' OR pool = $2)`, s.now(), pool)
	if err != nil {
		return nil, err
	}
	sortDeleted(out)
	return out, nil
}

func (s *Store) listInstances(ctx context.Context, sql string, args ...any) ([]*runner.Instance, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list instances: %w", err)
	}
	out := []*runner.Instance{}
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("postgres: list instances: %w", err)
		}
		inst, err := decodeInstance(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, inst)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list instances: %w", err)
	}
	return out, nil
}

// PoolUsage implements store.Store: the pool's slot counter.
func (s *Store) PoolUsage(ctx context.Context, pool string) (int, error) {
	var live int
	err := s.pool.QueryRow(ctx, "SELECT live FROM runfleet_pools WHERE name = $1", pool).Scan(&live)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: pool usage %q: %w", pool, err)
	}
	return live, nil
}

func decodeInstance(raw []byte) (*runner.Instance, error) {
	var inst runner.Instance
	if err := json.Unmarshal(raw, &inst); err != nil {
		return nil, fmt.Errorf("postgres: decode instance: %w", err)
	}
	return &inst, nil
}
