package dynamodb

import (
	"context"
	"errors"

	"github.com/runfleet/runfleet/internal/store"
)

// A credential's shared GitHub budget is one BUDGET#<credential> item,
// written whole by the generic compare-and-set on its version, like a
// lease: only GetItem and a conditional PutItem, which every role that
// writes records may call already. The state is a few hundred bytes, so a
// read is 1 read unit (consistent) and a write 1 write unit.
var budgetKind = documentKind[store.BudgetRecord]{
	kind:       store.KindBudget,
	prefix:     prefixBudget,
	attr:       "budget",
	zero:       func(credential string) *store.BudgetRecord { return &store.BudgetRecord{Credential: credential} },
	version:    func(b *store.BudgetRecord) int64 { return b.Version },
	setVersion: func(b *store.BudgetRecord, v int64) { b.Version = v },
}

// ChangeBudget implements store.Budgets with the kind's generic change:
// one consistent GetItem, and one conditional PutItem when change writes;
// a lost race costs one more of each.
func (s *Store) ChangeBudget(ctx context.Context, credential string, change func(state []byte) ([]byte, error)) (*store.BudgetRecord, error) {
	if credential == "" {
		return nil, errors.New("change budget: no credential")
	}
	return budgetKind.change(ctx, s, credential, store.MaxBudgetConflicts, func(cur *store.BudgetRecord) (*store.BudgetRecord, error) {
		next, err := change(cur.State)
		if err != nil || next == nil {
			return nil, err
		}
		return &store.BudgetRecord{Credential: credential, State: next}, nil
	})
}

// GetBudget implements store.Budgets.
func (s *Store) GetBudget(ctx context.Context, credential string) (*store.BudgetRecord, error) {
	return budgetKind.get(ctx, s, credential)
}
