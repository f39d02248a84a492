package store

import (
	"context"
	"encoding/json"
)

// Budgets keeps the GitHub API budgets that several processes share: one
// record per credential ("installation:<id>", "app", "token"), holding the
// budget's state as the budget package serializes it, written by
// compare-and-set like every other record. The store does not read the
// state: pacing is decided in internal/github/budget, and the adapter
// (internal/github/budget/storemeter) turns it into bytes and back.
//
// Only the points and GitHub's reported limits are shared. Requests in
// flight are counted per process: a shared in-flight count would leak the
// slot of any invocation that died holding it.
type Budgets interface {
	// ChangeBudget reads the credential's budget (a nil State at Version 0
	// when none is stored), lets change make the next State (nil: nothing
	// to write) and writes it at the next version, compare-and-set on the
	// version read. A write lost to another process is read and changed
	// again, after a jittered backoff, a bounded number of times; then it
	// returns a *ConflictError. change may therefore run more than once
	// and must use only its argument and values computed before the call.
	// It returns the record written, or nil when change wrote nothing.
	ChangeBudget(ctx context.Context, credential string, change func(state []byte) ([]byte, error)) (*BudgetRecord, error)
	// GetBudget returns the stored budget; a credential never written
	// reads as Version 0 with a nil State, never an error.
	GetBudget(ctx context.Context, credential string) (*BudgetRecord, error)
}

// BudgetRecord is one credential's shared budget.
type BudgetRecord struct {
	Credential string `json:"credential"`
	// State is the budget package's JSON; opaque here.
	State json.RawMessage `json:"state,omitempty"`
	// Version increases by one on every write; 0 is a budget never
	// written.
	Version int64 `json:"version"`
}

// MaxBudgetConflicts bounds ChangeBudget's attempts. Every GitHub call
// writes its credential's budget once, so concurrent workers collide often
// and cheaply: a lost race costs one more read and write.
const MaxBudgetConflicts = 16
