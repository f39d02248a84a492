package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// recordKind is one kind of small record kept whole in runfleet_records
// and written by compare-and-set on its version: spot breakers, leases,
// cursors and budgets differ in what they hold, not in how a lost race is
// detected and reported.
type recordKind[R any] struct {
	kind store.Kind
	// zero is the record of a name never written.
	zero       func(name string) *R
	version    func(*R) int64
	setVersion func(*R, int64)
}

var (
	spotBreakerKind = recordKind[runner.SpotBreaker]{
		kind:       store.KindSpotBreaker,
		zero:       func(pool string) *runner.SpotBreaker { return &runner.SpotBreaker{Pool: pool} },
		version:    func(r *runner.SpotBreaker) int64 { return r.Version },
		setVersion: func(r *runner.SpotBreaker, v int64) { r.Version = v },
	}
	cursorKind = recordKind[store.Cursor]{
		kind:       store.KindCursor,
		zero:       func(name string) *store.Cursor { return &store.Cursor{Name: name} },
		version:    func(r *store.Cursor) int64 { return r.Version },
		setVersion: func(r *store.Cursor, v int64) { r.Version = v },
	}
	leaseKind = recordKind[runner.Lease]{
		kind:       store.KindLease,
		zero:       func(name string) *runner.Lease { return &runner.Lease{Name: name} },
		version:    func(r *runner.Lease) int64 { return r.Version },
		setVersion: func(r *runner.Lease, v int64) { r.Version = v },
	}
	budgetKind = recordKind[store.BudgetRecord]{
		kind:       store.KindBudget,
		zero:       func(credential string) *store.BudgetRecord { return &store.BudgetRecord{Credential: credential} },
		version:    func(r *store.BudgetRecord) int64 { return r.Version },
		setVersion: func(r *store.BudgetRecord, v int64) { r.Version = v },
	}
)

// find reads the record name; a name never written reads as its zero
// record. lock takes the row's lock for the rest of q's transaction.
func (k recordKind[R]) read(ctx context.Context, q querier, name string, lock bool) (*R, error) {
	sql := "SELECT record FROM runfleet_records WHERE kind = $1 AND name = $2"
	if lock {
		sql += " FOR UPDATE"
	}
	var raw []byte
	err := q.QueryRow(ctx, sql, string(k.kind), name).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return k.zero(name), nil
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: read %s %q: %w", k.kind, name, err)
	}
	r := new(R)
	if err := json.Unmarshal(raw, r); err != nil {
		return nil, fmt.Errorf("postgres: decode %s %q: %w", k.kind, name, err)
	}
	return r, nil
}

func (k recordKind[R]) find(ctx context.Context, q querier, name string) (*R, error) {
	return k.read(ctx, q, name, false)
}

// compareAndSet writes next (at its own version) if the stored record is
// still at e.Version (0: none stored); otherwise it writes nothing and
// returns e.Conflict(). A row and a version-0 expectation meet only when
// no row exists: the INSERT's ON CONFLICT leaves a stored one alone.
func (k recordKind[R]) compareAndSet(ctx context.Context, q querier, e store.Expectation, next *R) error {
	raw, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("postgres: encode %s %q: %w", k.kind, e.Key, err)
	}
	sql := `UPDATE runfleet_records SET version = $3, record = $4
		WHERE kind = $1 AND name = $2 AND version = $5`
	if e.Version == 0 {
		sql = `INSERT INTO runfleet_records (kind, name, version, record) VALUES ($1, $2, $3, $4)
		ON CONFLICT (kind, name) DO NOTHING`
	}
	args := []any{string(k.kind), e.Key, k.version(next), string(raw)}
	if e.Version != 0 {
		args = append(args, e.Version)
	}
	tag, err := q.Exec(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("postgres: write %s %q: %w", k.kind, e.Key, err)
	}
	if tag.RowsAffected() == 0 {
		return e.Conflict()
	}
	return nil
}

// put is the caller-facing compare-and-set of next at next's version; on
// success next's version is incremented.
func (k recordKind[R]) put(ctx context.Context, q querier, name string, next *R, clone func(*R) *R) error {
	read := k.version(next)
	record := clone(next)
	k.setVersion(record, read+1)
	if err := k.compareAndSet(ctx, q, store.Expect(k.kind, name, "", read), record); err != nil {
		return err
	}
	k.setVersion(next, read+1)
	return nil
}

// change reads the record name with its row locked, lets decide make its
// next record (nil: nothing to write) and writes that at the next version,
// in one transaction: while the row exists no other writer comes between
// the read and the write. Two writers creating the record at once both
// read none; the loser's insert finds the winner's row and is decided
// again on what the winner wrote, up to attempts times. decide may run
// more than once and may only use what it is given. It returns what it
// wrote (nil when nothing).
func (k recordKind[R]) change(ctx context.Context, pool *pgxpool.Pool, name string, attempts int,
	decide func(cur *R) (*R, error)) (*R, error) {
	var err error
	for range attempts {
		var written *R
		err = inTx(ctx, pool, func(tx pgx.Tx) error {
			written = nil
			cur, err := k.read(ctx, tx, name, true)
			if err != nil {
				return err
			}
			next, err := decide(cur)
			if err != nil || next == nil {
				return err
			}
			read := k.version(cur)
			k.setVersion(next, read+1)
			if err := k.compareAndSet(ctx, tx, store.Expect(k.kind, name, "", read), next); err != nil {
				return err
			}
			written = next
			return nil
		})
		if !errors.Is(err, store.ErrConflict) {
			if err != nil {
				return nil, err
			}
			return written, nil
		}
	}
	return nil, err
}
