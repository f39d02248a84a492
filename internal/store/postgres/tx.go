package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// maxTxAttempts bounds the re-runs of a transaction PostgreSQL aborted
// for a deadlock. At READ COMMITTED with row locks taken in one order
// (instance, job, pool) none is expected; the retry is a backstop.
const maxTxAttempts = 3

// inTx runs fn in a READ COMMITTED transaction and commits it; an error
// from fn rolls everything back, so a refusal writes nothing. fn may run
// more than once: it must assign, not accumulate, what it reports.
func inTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	var err error
	for range maxTxAttempts {
		err = pgx.BeginFunc(ctx, pool, fn)
		if !retryable(err) {
			return err
		}
	}
	return err
}

// retryable reports a transaction PostgreSQL aborted so that it may be run
// again: a deadlock or a serialization failure.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "40001")
}

// querier is what both a pool and a transaction offer.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

var (
	_ querier = (*pgxpool.Pool)(nil)
	_ querier = (pgx.Tx)(nil)
)

// nullTime is an expiry column's value: NULL for the zero time (a record
// with no expiry), else t at PostgreSQL's microsecond precision.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return ceilMicro(t)
}

// ceilMicro rounds t up to a whole microsecond. PostgreSQL would round a
// finer time to the nearest one, and an expiry must never come early.
func ceilMicro(t time.Time) time.Time {
	if c := t.Truncate(time.Microsecond); !c.Equal(t) {
		return c.Add(time.Microsecond)
	}
	return t
}
