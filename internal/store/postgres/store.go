// Package postgres is a store.Store on PostgreSQL (pgx), for `runfleet
// serve` processes that share one database. Its tables mirror bolt's
// buckets and DynamoDB's items (schema.go):
//
//	runfleet_instances    one row per instance: name, pool, status, version,
//	                      expires_at as columns, the runner.Instance as JSON;
//	                      deleted ones kept until expires_at
//	runfleet_pools        each pool's live count, the max_runners counter
//	runfleet_jobs         one row per job run attempt: key, status, version,
//	                      queued_at, expires_at, the runner.Job as JSON
//	runfleet_records      the small records written whole by compare-and-set
//	                      on their version: spot breakers, leases, cursors,
//	                      GitHub budgets (kind, name, version, JSON)
//	runfleet_credentials  a runner's JIT configuration until it expires
//	runfleet_meta         the installation id
//
// and, opened with OpenWithQueue, the work queue's table (package
// queue/postgres), so that an instance and its create message commit in
// one transaction.
//
// Transactions run at READ COMMITTED. Every conditional write is an
// UPDATE (or INSERT … ON CONFLICT … DO UPDATE) whose WHERE names the
// version and status the writer read: PostgreSQL locks the row and
// re-checks that WHERE against the latest committed version before
// writing, so of two writers from one version exactly one writes, and the
// other sees zero rows affected — a *store.ConflictError. Pool slots are a
// counter row updated under "live < max_runners" in the same transaction
// as the instance, so capacity is never exceeded however many processes
// create at once.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/runfleet/runfleet/internal/pgmigrate"
	"github.com/runfleet/runfleet/internal/runner"
	"github.com/runfleet/runfleet/internal/store"
)

// Store is a store.Store kept in a PostgreSQL database.
type Store struct {
	// Leases are the generic lease operations over changeLease.
	store.Leases
	pool *pgxpool.Pool
	// ownsPool: Close closes pool (Open made it).
	ownsPool bool
	now      func() time.Time
}

var (
	_ store.Store         = (*Store)(nil)
	_ store.Jobs          = (*Store)(nil)
	_ store.SpotBreakers  = (*Store)(nil)
	_ store.Credentials   = (*Store)(nil)
	_ store.Leases        = (*Store)(nil)
	_ store.Cursors       = (*Store)(nil)
	_ store.Budgets       = (*Store)(nil)
	_ store.DeletedLister = (*Store)(nil)
	_ store.Purger        = (*Store)(nil)
)

type options struct {
	now func() time.Time
}

// Option tunes Open.
type Option func(*options)

// WithClock replaces time.Now for the store's expiry decisions (deleted
// instances, settled jobs, credentials), so retention can be tested
// without waiting for it. Leases use the time their callers pass.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// Open connects to the database dsn names (a postgres:// URL or key=value
// string; pgxpool's pool_max_conns and the like apply), brings its schema
// up to date and returns the store. A database migrated by a newer
// runfleet is refused (pgmigrate.ErrNewerSchema).
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	pool, err := Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	s, err := New(ctx, pool, opts...)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownsPool = true
	return s, nil
}

// Connect opens a connection pool to dsn and checks that the server
// answers. Errors never repeat the DSN, which may hold a password.
func Connect(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors quote the DSN (and so the password).
		return nil, errors.New("postgres: the DSN cannot be parsed (expected postgres://user:password@host:port/database or key=value pairs)")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect to %s: %w", where(cfg), err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: connect to %s: %w", where(cfg), err)
	}
	return pool, nil
}

// where names the server and database of cfg without credentials.
func where(cfg *pgxpool.Config) string {
	return fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
}

// Where names the server and database of dsn without credentials, for
// logs ("" when it cannot be parsed).
func Where(dsn string) string {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return ""
	}
	return where(cfg)
}

// New is Open over a pool the caller owns (Close leaves it open).
func New(ctx context.Context, pool *pgxpool.Pool, opts ...Option) (*Store, error) {
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if _, err := pgmigrate.Apply(ctx, pool, schemaComponent, migrations); err != nil {
		return nil, fmt.Errorf("postgres: prepare the store's schema: %w", err)
	}
	s := &Store{pool: pool, now: o.now}
	s.Leases = store.NewLeases(s.changeLease, func(ctx context.Context, name string) (*runner.Lease, error) {
		return leaseKind.find(ctx, s.pool, name)
	})
	return s, nil
}

// Close closes the connection pool if Open made it.
func (s *Store) Close() error {
	if s.ownsPool {
		s.pool.Close()
	}
	return nil
}

// Pool is the store's connection pool, for a queue kept in the same
// database.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
