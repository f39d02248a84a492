package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// maxCreateRaces bounds how often a change of a small record is decided
// again because another writer created the record first. Once the row
// exists its lock orders the writers, so one re-read decides.
const maxCreateRaces = 4

// GetSpotBreaker implements store.SpotBreakers.
func (s *Store) GetSpotBreaker(ctx context.Context, pool string) (*runner.SpotBreaker, error) {
	return spotBreakerKind.find(ctx, s.pool, pool)
}

// PutSpotBreaker implements store.SpotBreakers.
func (s *Store) PutSpotBreaker(ctx context.Context, next *runner.SpotBreaker) error {
	if next == nil || next.Pool == "" {
		return errors.New("postgres: spot breaker: no pool")
	}
	return spotBreakerKind.put(ctx, s.pool, next.Pool, next, (*runner.SpotBreaker).Clone)
}

// GetCursor implements store.Cursors.
func (s *Store) GetCursor(ctx context.Context, name string) (*store.Cursor, error) {
	return cursorKind.find(ctx, s.pool, name)
}

// PutCursor implements store.Cursors.
func (s *Store) PutCursor(ctx context.Context, next *store.Cursor) error {
	if err := store.CheckCursor(next); err != nil {
		return err
	}
	return cursorKind.put(ctx, s.pool, next.Name, next, func(c *store.Cursor) *store.Cursor {
		copied := *c
		return &copied
	})
}

// changeLease is store.ChangeLease: the kind's generic change. decide
// uses the caller's now, never the store's clock.
func (s *Store) changeLease(ctx context.Context, name string, decide func(cur *runner.Lease) (*runner.Lease, error)) (*runner.Lease, error) {
	return leaseKind.change(ctx, s.pool, name, maxCreateRaces, decide)
}

// ChangeBudget implements store.Budgets with the kind's generic change:
// the row lock orders concurrent changes of one credential's budget, so
// each counts once without a lost race.
func (s *Store) ChangeBudget(ctx context.Context, credential string, change func(state []byte) ([]byte, error)) (*store.BudgetRecord, error) {
	if credential == "" {
		return nil, errors.New("postgres: change budget: no credential")
	}
	rec, err := budgetKind.change(ctx, s.pool, credential, store.MaxBudgetConflicts, func(cur *store.BudgetRecord) (*store.BudgetRecord, error) {
		next, err := change(cur.State)
		if err != nil || next == nil {
			return nil, err
		}
		return &store.BudgetRecord{Credential: credential, State: next}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: change budget %q: %w", credential, err)
	}
	return rec, nil
}

// GetBudget implements store.Budgets.
func (s *Store) GetBudget(ctx context.Context, credential string) (*store.BudgetRecord, error) {
	return budgetKind.find(ctx, s.pool, credential)
}
