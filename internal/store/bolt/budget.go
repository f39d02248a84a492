package bolt

import (
	"context"
	"errors"

	"github.com/runfleet/runfleet/internal/store"
)

// ChangeBudget implements store.Budgets with the kind's generic change, in
// one transaction: bbolt has one writer, so a change never loses a race.
func (s *Store) ChangeBudget(ctx context.Context, credential string, change func(state []byte) ([]byte, error)) (*store.BudgetRecord, error) {
	if credential == "" {
		return nil, errors.New("bolt: change budget: no credential")
	}
	return budgetKind.change(ctx, s, credential, func(cur *store.BudgetRecord) (*store.BudgetRecord, error) {
		next, err := change(cur.State)
		if err != nil || next == nil {
			return nil, err
		}
		return &store.BudgetRecord{Credential: credential, State: next}, nil
	})
}

// GetBudget implements store.Budgets.
func (s *Store) GetBudget(ctx context.Context, credential string) (*store.BudgetRecord, error) {
	return budgetKind.find(ctx, s, credential)
}
