package postgres

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/runfleet/runfleet/internal/store"
)

// createInstanceSQL writes a new instance unless its name is taken: by a
// live instance, or a deleted one still within its retention. A deleted
// one past it (not purged yet) is replaced, as DynamoDB's TTL would have
// freed the name. A concurrent create of the same name waits for the
// first to commit or roll back, then is judged on what it left.
const createInstanceSQL = `
INSERT INTO runfleet_instances AS i (name, pool, status, version, expires_at, record)
VALUES ($1, $2, $3, 1, NULL, $4)
ON CONFLICT (name) DO UPDATE
	SET pool = excluded.pool, status = excluded.status, version = 1, expires_at = NULL, record = excluded.record
	WHERE i.status = 'deleted' AND i.expires_at <= $5`

// takeSlotSQL reserves one of the pool's slots if it has one free. The
// pool's row lock orders concurrent creates, and each re-checks "live <
// max" against the count the one before it committed.
const takeSlotSQL = `
INSERT INTO runfleet_pools AS p (name, live) VALUES ($1, 1)
ON CONFLICT (name) DO UPDATE SET live = p.live + 1 WHERE p.live < $2`

// CreateInstance implements store.Store: the instance, its pool slot and
// the job's next version in one transaction.
func (s *Store) CreateInstance(ctx context.Context, a store.Admission) error {
	return s.admit(ctx, a, nil)
}

// admit is CreateInstance; also, when not nil, runs in the same
// transaction once the admission is written, so its writes commit iff the
// admission's do. It may run more than once.
func (s *Store) admit(ctx context.Context, a store.Admission, also func(tx pgx.Tx) error) error {
	if err := store.CheckAdmission(a); err != nil {
		return err
	}
	record := a.Instance.Clone()
	record.Version = 1
	raw, err := json.Marshal(record)
	if err != nil {
		return fmt.Errorf("postgres: encode instance %q: %w", record.Name, err)
	}
	now := s.now()
	var job *jobWrite
	if a.Job != nil {
		w, err := newJobWrite(a.Job, a.JobFrom, now)
		if err != nil {
			return err
		}
		job = &w
	}
	err = inTx(ctx, s.pool, func(tx pgx.Tx) error {
		// In bolt's order, every refusal rolling back what came before: a
		// taken name first (the caller's runner exists), then a stale
		// job (re-read it rather than wait for room), then a full pool.
		tag, err := tx.Exec(ctx, createInstanceSQL, record.Name, record.Pool, string(record.Status), string(raw), now)
		if err != nil {
			return fmt.Errorf("postgres: create instance %q: %w", record.Name, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("postgres: instance %q: %w", record.Name, store.ErrAlreadyExists)
		}
		if job != nil {
			if err := job.write(ctx, tx); err != nil {
				return err
			}
		}
		if tag, err = tx.Exec(ctx, takeSlotSQL, record.Pool, a.MaxRunners); err != nil {
			return fmt.Errorf("postgres: pool %q: %w", record.Pool, err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("postgres: pool %q holds its max_runners %d: %w", record.Pool, a.MaxRunners, store.ErrPoolFull)
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
