// Package storemeter keeps a GitHub budget's State in the store, so that
// every process using a credential — on Lambda, every worker, reconciler
// and delete invocation at once — spends from one budget instead of each
// from its own.
//
// It is the adapter between two inner packages: budget (which decides
// the pace and knows nothing of storage) and the store port (which keeps a
// versioned record and knows nothing of pacing). Neither imports it; the
// composition roots (internal/wiring) do.
//
// Each Update is one store.Budgets.ChangeBudget: read the record, apply
// the budget's step to the decoded State, write it back compare-and-set on
// the version read, and read and apply again when another process wrote
// first. A step that changes nothing (the answer to a GitHub call that
// reports nothing new, a look at when a call could go) writes nothing. On
// DynamoDB, a GitHub call costs one consistent GetItem and one conditional
// PutItem to take its points and one GetItem to record GitHub's answer
// (docs/github-budget.md has the measured numbers).
package storemeter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/runfleet/runfleet/internal/github/budget"
	"github.com/runfleet/runfleet/internal/store"
)

// Meter is a budget.Meter kept in one store record per credential.
type Meter struct {
	store      store.Budgets
	credential string
}

var _ budget.Meter = (*Meter)(nil)

// New returns the meter of credential's budget in st.
func New(st store.Budgets, credential string) *Meter {
	return &Meter{store: st, credential: credential}
}

// For returns a maker of meters in st, one per credential, for
// rest.Options.Meters.
func For(st store.Budgets) func(credential string) budget.Meter {
	return func(credential string) budget.Meter { return New(st, credential) }
}

// Update applies fn to the stored State as one compare-and-set.
func (m *Meter) Update(ctx context.Context, fn func(*budget.State)) error {
	_, err := m.store.ChangeBudget(ctx, m.credential, func(stored []byte) ([]byte, error) {
		var s budget.State
		if len(stored) > 0 {
			// A state this version cannot read (another version's, during
			// a deploy) starts afresh: a full bucket is the only cost, and
			// the next answer from GitHub restores the primary budget.
			if err := json.Unmarshal(stored, &s); err != nil {
				s = budget.State{}
			}
		}
		fn(&s)
		if len(stored) == 0 && s == (budget.State{}) {
			return nil, nil
		}
		next, err := json.Marshal(&s)
		if err != nil {
			return nil, fmt.Errorf("github budget %s: encode: %w", m.credential, err)
		}
		if bytes.Equal(next, stored) {
			return nil, nil
		}
		return next, nil
	})
	if errors.Is(err, store.ErrConflict) {
		// Not wrapped: the caller of a GitHub call must not mistake it for
		// a lost race of its own record.
		return fmt.Errorf("shared github budget %s: %w (%v)", m.credential, budget.ErrMeterContended, err)
	}
	if err != nil {
		return fmt.Errorf("shared github budget %s: %w", m.credential, err)
	}
	return nil
}
